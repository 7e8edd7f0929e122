"""For tests and benchmarks only: the internals of mirror_engine.replication that they reach past the face for.

Modules whose attributes tests replace, and the engine's inner parts built alone.

Production code imports the face (`mirror_engine.replication`), never this module; import-linter contracts in
pyproject.toml let only `tests` and `bench` import it."""

from __future__ import annotations

from mirror_engine.replication import (
    beside_the_copy,
    clients,
    copy_contract,
    delivery,
    flow_run,
    limits_gate,
    record_producers,
    side_records,
    status_reporter,
    target_upkeep,
)
from mirror_engine.replication.copy_contract import QUEUE_MAX_KBYTES, QUEUE_MAX_MESSAGES
from mirror_engine.replication.delivery import Transactional
from mirror_engine.replication.faults import FENCED_BY_ANOTHER, Faults
from mirror_engine.replication.limits_gate import LimitsGate
from mirror_engine.replication.membership import WorkerGroup
from mirror_engine.replication.partition_state import FAR
from mirror_engine.replication.record_producers import MOST_PRODUCERS, TOPICS_PER_PRODUCER, RecordProducers
from mirror_engine.replication.status_reporter import StatusReporter
from mirror_engine.replication.target_topics import TargetTopics
from mirror_engine.replication.target_upkeep import TargetUpkeep

__all__ = [
    "FAR",
    "FENCED_BY_ANOTHER",
    "MOST_PRODUCERS",
    "QUEUE_MAX_KBYTES",
    "QUEUE_MAX_MESSAGES",
    "TOPICS_PER_PRODUCER",
    "Faults",
    "LimitsGate",
    "RecordProducers",
    "StatusReporter",
    "TargetTopics",
    "TargetUpkeep",
    "Transactional",
    "WorkerGroup",
    "beside_the_copy",
    "clients",
    "copy_contract",
    "delivery",
    "flow_run",
    "limits_gate",
    "record_producers",
    "side_records",
    "status_reporter",
    "target_upkeep",
]
