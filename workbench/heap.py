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
import threading

log = logging.getLogger("workbench.heap")
_lock = threading.Lock()
_frozen = False


def freeze_what_is_loaded() -> int:
    """Keep every object alive now out of later collections (`gc.freeze()`), once per process, after its first
    warm-up (a later one, as each new session of the app warms the one cached engine, changes nothing): how many
    objects this call froze (0 after the first). Reference counting still frees them once unreferenced; only cycles
    among them wait for the process's end, so freezing once bounds what can wait so."""
    global _frozen
    with _lock:
        if _frozen:
            return 0
        gc.collect()  # what is garbage now is freed first, not kept for the process's life
        gc.freeze()
        _frozen = True
        frozen = gc.get_freeze_count()
    log.info("warm-up done: %d loaded objects are kept out of later garbage collections", frozen)
    return frozen


def thaw() -> None:
    """Undo the freeze (`gc.unfreeze()`) and let the next warm-up freeze again: for a process that loads everything
    anew, as a test of the warm-ups does."""
    global _frozen
    with _lock:
        gc.unfreeze()
        _frozen = False
