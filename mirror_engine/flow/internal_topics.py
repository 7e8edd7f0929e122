"""The engine's internal topics on the target cluster: names, configs, creation.

MirrorMaker 2's topics keep MM2's names and record formats, so MM2's own tools read them. The
offset-syncs topic is created with `cleanup.policy=delete` and unlimited retention rather than
MM2's compaction: compaction keeps one sync per partition, and exact translation of any copied
offset needs every discontinuity the flow has seen (a few bytes each).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from mirror_engine.kafka import ENGINE_GROUP_PREFIX, describe_topic_configs, existing_topics, wait_until_served
from mirror_engine.plan import HEARTBEATS_TOPIC, MigrationPlan

log = logging.getLogger(__name__)

# Segments of the compacted topics written at every interval (progress: a record per partition that moved, each
# second; checkpoints: a record per group partition that moved, each round). The broker compacts closed segments
# only, and its default segment is 1 GiB: progress records batched with lz4 take about 13 bytes each, so a fresh
# reader of a flow of 10,000 moving partitions (a switch, a sensor, a worker taking partitions) read up to 80
# million records, two hours of writes. With 1 MiB segments (the least a Kafka 4 broker takes) it reads the
# compacted head, one record per partition, plus about 80,000 records a segment not cleaned yet.
COMPACTED_SEGMENT_BYTES = 1024 * 1024


@dataclass(frozen=True)
class InternalTopics:
    progress: str
    offset_syncs: str
    checkpoints: str
    heartbeats: str
    control: str
    status: str
    reports: str

    @classmethod
    def for_plan(cls, plan: MigrationPlan) -> InternalTopics:
        return cls.of_flow(plan.source.alias, plan.name, plan)

    @classmethod
    def of_return_flow(cls, plan: MigrationPlan) -> InternalTopics | None:
        """The topics, on this flow's source, of the flow running the other way (`cutover.return_flow`), named by
        this plan's replication policy; None when the plan names none."""
        name = plan.cutover.return_flow
        return None if name is None else cls.of_flow(plan.target.alias, name, plan)

    @classmethod
    def of_flow(cls, source_alias: str, plan_name: str, plan: MigrationPlan) -> InternalTopics:
        """The topics of the flow from `source_alias` of the plan named `plan_name`, by `plan`'s policy."""
        policy = plan.policy()
        flow = f"{source_alias}.{plan_name}"
        return cls(
            # The engine's own topics end in ".internal", so no plan ever replicates them.
            progress=f"mirror-engine-offsets.{flow}.internal",
            offset_syncs=policy.offset_syncs_topic(source_alias),
            checkpoints=policy.checkpoints_topic(source_alias),
            heartbeats=HEARTBEATS_TOPIC,
            control=f"mirror-engine-control.{flow}.internal",
            status=f"mirror-engine-status.{flow}.internal",
            reports=f"mirror-engine-reports.{flow}.internal",
        )

    def specs(self) -> dict[str, dict[str, str]]:
        """Each topic's configs. All have one partition: MM2's readers read partition 0 only."""
        compacted = {"cleanup.policy": "compact"}
        rewritten = {**compacted, "segment.bytes": str(COMPACTED_SEGMENT_BYTES)}
        return {
            self.progress: rewritten,
            self.offset_syncs: {"cleanup.policy": "delete", "retention.ms": "-1", "retention.bytes": "-1"},
            self.checkpoints: rewritten,
            self.heartbeats: compacted,
            self.control: compacted,
            self.status: {"cleanup.policy": "delete", "retention.ms": "86400000"},
            self.reports: compacted,
        }


def engine_group_id(plan: MigrationPlan) -> str:
    """The consumer group an engine's workers form on the target to share the flow's work units (`work_units`); the
    copy's consumers name it too, on the source, where they never join it (they are assigned their partitions)."""
    return f"{ENGINE_GROUP_PREFIX}{plan.name}"


def checkpoint_lease_group(plan: MigrationPlan) -> str:
    """The consumer group on the target whose member holding the checkpoints topic writes the flow's checkpoints
    and group offsets (`checkpoint_loop`). Plan names hold no dot, so it never equals an engine group id."""
    return f"{ENGINE_GROUP_PREFIX}checkpoints.{plan.name}"


def ensure_internal_topics(admin: AdminClient, topics: InternalTopics, replication_factor: int = -1) -> None:
    """Create the internal topics that are missing; warn when an existing offset-syncs topic is compacted."""
    existing = existing_topics(admin, topics.specs())
    missing = [
        NewTopic(name, 1, replication_factor, config=config)
        for name, config in topics.specs().items()
        if name not in existing
    ]
    if missing:
        for name, future in admin.create_topics(missing, request_timeout=30).items():
            try:
                future.result()
            except KafkaException as error:
                if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    raise
                # Another worker was faster, or the broker has not shown it yet (it shows topics created after a
                # burst of thousands of partitions only once it has created their logs).
                log.info("internal topic %s exists on the target, not shown yet: waiting for it", name)
                continue
            log.info("created internal topic %s on the target", name)
        wait_until_served(admin, [topic.topic for topic in missing])
    if topics.offset_syncs in existing:
        configs = describe_topic_configs(admin, [topics.offset_syncs]).get(topics.offset_syncs, [])
        policy = next((entry.value for entry in configs if entry.name == "cleanup.policy"), "")
        if "compact" in policy:
            log.warning(
                "offset-syncs topic %s is compacted (created by MirrorMaker 2?): compaction may drop the "
                "syncs that exact translation of older offsets needs", topics.offset_syncs,
            )
