"""The engine's own garbage collection: the set-up's cycles are freed before what the set-up keeps is frozen."""

from __future__ import annotations

import gc
import weakref
from types import SimpleNamespace

from mirror_engine.replication import Replicator


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_the_first_collection_frees_the_set_ups_cycles_then_freezes_the_rest():
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        kept, garbage = _Cycle(), _Cycle()
        gc.collect(1)  # both old by now, as the set-up's objects are when the copy starts
        gone = weakref.ref(garbage)
        del garbage
        engine = SimpleNamespace(_collections=0)
        Replicator._collect_garbage(engine)  # type: ignore[arg-type]
        assert gone() is None  # a cycle of the set-up's (a refused request's futures, say) is not kept all run
        assert gc.get_freeze_count() > 0 and kept.me is kept  # what the set-up keeps is never scanned again
    finally:
        gc.unfreeze()
        if was_enabled:
            gc.enable()
