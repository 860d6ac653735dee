"""Real pool workers and Redis round-trip counts for the pool's harnesses, the test suite and
``bench/run``; the pool's own processes never import it."""
