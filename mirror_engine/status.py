"""How far a flow has copied: per-partition lag from the engine's stored progress and the source's ends."""

from __future__ import annotations

from confluent_kafka import TopicPartition
from confluent_kafka.admin import OffsetSpec

from mirror_engine.clusters import admin_client
from mirror_engine.control import ControlChannel
from mirror_engine.internal_topics import InternalTopics
from mirror_engine.plan import MigrationPlan
from mirror_engine.progress import load_progress
from mirror_engine.topics import list_offsets


def replication_lag(plan: MigrationPlan, source_config: dict[str, str],
                    target_config: dict[str, str]) -> dict[tuple[str, int], int]:
    """Records not yet copied per source partition the plan replicates (switched topics left out)."""
    source_admin = admin_client(source_config)
    metadata = source_admin.list_topics(timeout=15).topics
    control = ControlChannel(plan, target_config)
    control.load()
    tps = [TopicPartition(topic, p) for topic in sorted(metadata)
           if plan.replicates_topic(topic) and topic not in control.switched_topics
           for p in metadata[topic].partitions]
    if not tps:
        return {}
    progress = load_progress(target_config, InternalTopics.for_plan(plan).progress)
    ends = list_offsets(source_admin, tps, OffsetSpec.latest())
    earliest = list_offsets(source_admin, tps, OffsetSpec.earliest())
    return {key: max(0, end - (progress[key].position if key in progress else earliest[key]))
            for key, end in ends.items()}
