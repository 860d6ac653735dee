"""One call at one hop, from admission to outcome: the attempt's lifecycle and the hop runner.

- :mod:`aipool.attempt.lifecycle`: the table of an attempt's states and events, and
  :class:`AttemptBook`, the one owner of its transitions (``attempt.lua``).
- :mod:`aipool.attempt.layout`: the keys, arguments and replies between Python and the script.
- :mod:`aipool.attempt.runner`: :class:`HopRunner`, what a worker does with a request at a hop;
  its parts, each on the one below: :mod:`aipool.attempt.call` (the call and how it ended),
  :mod:`aipool.attempt.forwarding` (where the request goes next, terminal answers),
  :mod:`aipool.attempt.records` (events, rows, ``finish``) and :mod:`aipool.attempt.visit` (one
  hop's view of a request; ``Done``, ``Forward``, ``Drop``).
- :mod:`aipool.attempt.identity`, :mod:`aipool.attempt.clock`, :mod:`aipool.attempt.bound`: a
  journey's name, Redis's time, and a call's wall-clock bound.
"""
