"""The replication engine: the copy and what runs beside it (MirrorMaker 2's dedicated mode), its clients, copier,
offset-sync writer, delivery modes, membership, assigner and restart."""

from mirror_engine.replication.beside_the_copy import BesideTheCopy, periodic_work
from mirror_engine.replication.copier import RecordCopier
from mirror_engine.replication.copy_contract import (
    fingerprint,
    produce_when_room,
    record_hash,
    target_producer_settings,
)
from mirror_engine.replication.engine import EngineError, Replicator, RunSummary, default_worker_id
from mirror_engine.replication.flow_run import FlowRun, run_flow
from mirror_engine.replication.flow_set_run import FlowSetRun
from mirror_engine.replication.memory import IdleTrim
from mirror_engine.replication.offset_syncs import OffsetSyncWriter, PartitionSyncs, SyncOnDelta
from mirror_engine.replication.partition_state import PartitionState
from mirror_engine.replication.reconcile import Reconciled, SourceWalk, TargetTail
from mirror_engine.replication.side_records import CopiedRange, SideRecordWriter
from mirror_engine.replication.supervision import (
    DetachedWorker,
    SupervisionError,
    find_engine,
    start_detached,
    stop_engine,
)

__all__ = [
    "BesideTheCopy",
    "CopiedRange",
    "DetachedWorker",
    "EngineError",
    "FlowRun",
    "FlowSetRun",
    "IdleTrim",
    "OffsetSyncWriter",
    "PartitionState",
    "PartitionSyncs",
    "Reconciled",
    "RecordCopier",
    "Replicator",
    "RunSummary",
    "SideRecordWriter",
    "SourceWalk",
    "SupervisionError",
    "SyncOnDelta",
    "TargetTail",
    "default_worker_id",
    "find_engine",
    "fingerprint",
    "periodic_work",
    "produce_when_room",
    "record_hash",
    "run_flow",
    "start_detached",
    "stop_engine",
    "target_producer_settings",
]
