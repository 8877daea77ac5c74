"""What a process that stays up keeps out of Python's full garbage collections once its models are loaded.

A server or an app holds about half a million objects once its libraries and models are loaded (557,281 on the
demo's embedder and reranker), and a full (generation 2) collection walks them all while every thread waits: 256-299
ms on a 2-core machine, over a second on a loaded one. One falling inside a search served under a rerank budget made
it answer past the budget. `gc.freeze()` moves what is loaded to the permanent generation, which collections skip
(a full one then walks only what requests made since: under 1 ms after the demo's warm-up); nothing frozen is freed
by the collector, so it is called once what is loaded will stay for the process's life.
"""

from __future__ import annotations

import gc
import logging

log = logging.getLogger("workbench.heap")


def freeze_what_is_loaded() -> int:
    """Keep every object alive now out of later collections (`gc.freeze()`), after a warm-up; how many are frozen
    in all. Reference counting still frees them once unreferenced; only cycles among them wait for the process's
    end."""
    gc.collect()  # what is garbage now is freed first, not kept for the process's life
    gc.freeze()
    frozen = gc.get_freeze_count()
    log.info("warm-up done: %d loaded objects are kept out of later garbage collections", frozen)
    return frozen
