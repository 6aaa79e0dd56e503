"""How Taskdeck's long-running processes (Daphne's, the workers) set Python's cyclic
garbage collector once they have loaded what they keep for life.

- `gc.freeze()`: everything loaded so far (modules, settings, URL patterns, the ORM's
  caches, the agents) lives as long as the process, so it is kept out of every
  collection; a full collection then walks only what requests and sockets made since.
  Measured: GetTask p99 under wrk about a third lower; with 100 AG-UI sockets a full
  collection took about 80 ms, during which no socket heard of any change, and under
  10 ms frozen. Once, at start-up: what is frozen is never freed.
- Full collections ten times rarer (the third threshold 100, Python's default 10).
  Under load a web process still ran one every 2-3 s, 45-80 ms each (wall time on a busy
  machine), and every change in flight meanwhile reached its sockets that much later: at
  bench/agui_fanout.py --load 16, most of commit → STATE_DELTA's p99. What they collect
  is small now (the cycles each call made are broken where they were made:
  a2a.fields.unbind, dashboard/protocol_handler.py, dashboard/body_limit.py), and young
  collections still free what dies young; what waits longer for a full collection is a
  few thousand objects (docs/production.md, "Garbage and the tail").
"""

from __future__ import annotations

import gc

FULL_EVERY = 100  # young-generation collections between two full ones (Python: 10)


def settle() -> None:
    """Freeze what the process loaded, and make full collections rarer (module doc)."""
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_EVERY)
