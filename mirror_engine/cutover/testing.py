"""For tests and benchmarks only: the internals of mirror_engine.cutover that they reach past the face for.

A checkpoint round's log and one readiness check built alone.

Production code imports the face (`mirror_engine.cutover`), never this module; import-linter contracts in
pyproject.toml let only `tests` and `bench` import it."""

from __future__ import annotations

from mirror_engine.cutover.checkpoints import LOG_GROUPS, GroupSyncResult, log_round
from mirror_engine.cutover.readiness import EngineCopying

__all__ = [
    "LOG_GROUPS",
    "EngineCopying",
    "GroupSyncResult",
    "log_round",
]
