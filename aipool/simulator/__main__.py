"""``python -m aipool.simulator``: run the simulator in the foreground."""

from aipool.simulator.serve import main

raise SystemExit(main())
