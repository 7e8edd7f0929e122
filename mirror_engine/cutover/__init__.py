"""Cutover: readiness checks (one definition of ready), the catch-up gate, checkpoints and their loop, switching
consumer groups and producers, rollback."""

from mirror_engine.cutover.catch_up import CatchUpBounds, CatchUpGate, LagSample, catch_up_sentence
from mirror_engine.cutover.checkpoint_loop import CheckpointLease, CheckpointLoop, LeaseRefused, lease_holder
from mirror_engine.cutover.checkpoints import Checkpointer, translate_group
from mirror_engine.cutover.group_batch import BatchPass, GroupBatch
from mirror_engine.cutover.group_switch import GroupSwitcher, GroupSwitchReport
from mirror_engine.cutover.outlook import (
    BLOCKED,
    SKIP,
    SWITCH,
    GroupOutlook,
    group_verdict,
    outlook_lines,
    read_switch_outlook,
    switch_outlook,
)
from mirror_engine.cutover.producer_switch import ProducerSwitchReport, switch_producers, unfence_producers
from mirror_engine.cutover.proof import fingerprint, records_around, records_around_all
from mirror_engine.cutover.readiness import CheckpointsCurrent, LagAtMost, build_check
from mirror_engine.cutover.readiness_base import Readiness, ReadinessCheck
from mirror_engine.cutover.ready_to_switch import (
    GroupReadyToSwitch,
    GroupsReadyToSwitch,
    GroupStopped,
    TopicReadyToSwitch,
)
from mirror_engine.cutover.waiting import NothingToSwitch, SwitchError, wait_until_ready

__all__ = [
    "BLOCKED",
    "SKIP",
    "SWITCH",
    "BatchPass",
    "CatchUpBounds",
    "CatchUpGate",
    "CheckpointLease",
    "CheckpointLoop",
    "Checkpointer",
    "CheckpointsCurrent",
    "GroupBatch",
    "GroupOutlook",
    "GroupReadyToSwitch",
    "GroupStopped",
    "GroupSwitchReport",
    "GroupSwitcher",
    "GroupsReadyToSwitch",
    "LagAtMost",
    "LagSample",
    "LeaseRefused",
    "NothingToSwitch",
    "ProducerSwitchReport",
    "Readiness",
    "ReadinessCheck",
    "SwitchError",
    "TopicReadyToSwitch",
    "build_check",
    "catch_up_sentence",
    "fingerprint",
    "group_verdict",
    "lease_holder",
    "outlook_lines",
    "read_switch_outlook",
    "records_around",
    "records_around_all",
    "switch_outlook",
    "switch_producers",
    "translate_group",
    "unfence_producers",
    "wait_until_ready",
]
