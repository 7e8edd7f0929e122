"""Cutover: readiness checks (one definition of ready), the catch-up gate, checkpoints and their loop, switching
consumer groups and producers, rollback."""

from mirror_engine.cutover.catch_up import CatchUpBounds, CatchUpGate, LagSample, catch_up_sentence
from mirror_engine.cutover.checkpoint_loop import CheckpointLease, CheckpointLoop, LeaseRefused, lease_holder
from mirror_engine.cutover.checkpoints import Checkpointer, translate_group
from mirror_engine.cutover.readiness import (
    CheckpointsCurrent,
    GroupReadyToSwitch,
    LagAtMost,
    ReadinessCheck,
    build_check,
)
from mirror_engine.cutover.switch import (
    GroupSwitcher,
    SwitchError,
    fingerprint,
    records_around,
    records_around_all,
    switch_producers,
)

__all__ = [
    "CatchUpBounds",
    "CatchUpGate",
    "CheckpointLease",
    "CheckpointLoop",
    "Checkpointer",
    "CheckpointsCurrent",
    "GroupReadyToSwitch",
    "GroupSwitcher",
    "LagAtMost",
    "LagSample",
    "LeaseRefused",
    "ReadinessCheck",
    "SwitchError",
    "build_check",
    "catch_up_sentence",
    "fingerprint",
    "lease_holder",
    "records_around",
    "records_around_all",
    "switch_producers",
    "translate_group",
]
