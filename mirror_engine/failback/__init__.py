"""The way back after a cutover (failback): the records the target received since copied back to the source by a
flow of their own, then groups and producers moved back with the same switches and proofs as the way there."""

from mirror_engine.failback.plan import FAILBACK_SUFFIX, check_failback_possible, failback_plan, failback_plan_name
from mirror_engine.failback.way_back import (
    Failback,
    FailbackError,
    FailbackPreparation,
    GroupSwitcherBack,
    PartitionStart,
)

__all__ = [
    "FAILBACK_SUFFIX",
    "Failback",
    "FailbackError",
    "FailbackPreparation",
    "GroupSwitcherBack",
    "PartitionStart",
    "check_failback_possible",
    "failback_plan",
    "failback_plan_name",
]
