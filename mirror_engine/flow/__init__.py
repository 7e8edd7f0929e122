"""A flow's own records on the target: its internal topics, stored progress, control channel, offset-syncs and the
offset mapping they give."""

from mirror_engine.flow.control import FLOW_ACTIONS, ControlChanges, ControlChannel
from mirror_engine.flow.internal_topics import (
    COMPACTED_SEGMENT_BYTES,
    InternalTopics,
    checkpoint_lease_group,
    engine_group_id,
    ensure_internal_topics,
)
from mirror_engine.flow.mapping import FlowMapping
from mirror_engine.flow.offset_map import OffsetMap, PartitionOffsetMap
from mirror_engine.flow.progress import (
    PartitionProgress,
    ProgressFollower,
    load_progress,
    managed_target_topics,
    progress_key,
    progress_value,
)
from mirror_engine.flow.work_units import MAX_WORK_UNITS, ensure_work_units, work_unit, work_units_topic

__all__ = [
    "COMPACTED_SEGMENT_BYTES",
    "FLOW_ACTIONS",
    "MAX_WORK_UNITS",
    "ControlChanges",
    "ControlChannel",
    "FlowMapping",
    "InternalTopics",
    "OffsetMap",
    "PartitionOffsetMap",
    "PartitionProgress",
    "ProgressFollower",
    "checkpoint_lease_group",
    "engine_group_id",
    "ensure_internal_topics",
    "ensure_work_units",
    "load_progress",
    "managed_target_topics",
    "progress_key",
    "progress_value",
    "work_unit",
    "work_units_topic",
]
