"""The way back after a cutover: what the target received since is copied back to the source, then groups and
producers move back, exactly.

Once a topic's producers were switched (`switch-producers`), its target partitions hold the forward copy, a record
for each source record, followed by what producers wrote on the target since. The way back is the flow of
`failback_plan` (target to source), which starts with the forward copy counted as its own: for each partition its
progress is stored at the forward copy's end on the target (offset T, where the first record written there since
lands), against the source partition's end, and its offset-syncs are the forward flow's turned around (a target
offset d of a copy of source offset u maps back to u). Stored before its engine starts (`prepare`), that start is
the flow's progress like any other:
- its engine copies every partition from T on, never a record that came from the source, and a restart (kill -9
  included) goes on from its stored progress as any flow does;
- a group's offset on the target maps back exactly wherever it is: inside the forward copy through the forward
  flow's syncs turned around, past it through the way back's own, both read from one mapping, and the switch back
  proves each partition as the forward switch does.
Fences the forward cutover set on the source are lifted where they would block the way back: a topic's write fence
when the way back starts (its engine writes there), a group's read fence as the group is committed back
(`GroupSwitcherBack`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from mirror_engine.cutover import GroupSwitcher
from mirror_engine.failback.plan import FAILBACK_SUFFIX, check_failback_possible, failback_plan
from mirror_engine.flow import ControlChannel, FlowMapping, InternalTopics, ensure_internal_topics, load_progress
from mirror_engine.kafka import (
    admin_client,
    existing_topics,
    fences_in_force,
    group_fence,
    list_offsets,
    metadata_of,
    remove_fence,
    topic_write_fence,
)
from mirror_engine.plan import MigrationPlan
from mirror_engine.replication import CopiedRange, SideRecordWriter

log = logging.getLogger("mirror_engine.failback")


class FailbackError(RuntimeError):
    """The way back cannot start: the message says why; nothing was changed."""


@dataclass
class PartitionStart:
    """Where the way back of one partition starts: the forward copy's end on the target, the source's end."""

    topic: str
    partition: int
    target_position: int  # T: the first target offset the forward copy did not write
    target_end: int
    source_end: int
    syncs: list[tuple[int, int]] = field(default_factory=list)  # the forward syncs turned around: (target, source)

    @property
    def records_back(self) -> int:
        """Target offsets past the forward copy: the records (and transaction markers) to copy back."""
        return self.target_end - self.target_position


@dataclass
class FailbackPreparation:
    plan: MigrationPlan  # the way back's plan
    starts: list[PartitionStart]
    already_started: list[tuple[str, int]]  # partitions whose way back was stored before (a rerun)
    unfenced_topics: list[str]
    dry_run: bool

    def render(self) -> str:
        back = sum(start.records_back for start in self.starts)
        verb = "would store" if self.dry_run else "stored"
        lines = [f"the way back of plan '{self.plan.name.removesuffix(FAILBACK_SUFFIX)}' is plan '{self.plan.name}': "
                 f"{self.plan.source.alias} -> {self.plan.target.alias}, {len(self.plan.topics.include)} topic(s)"]
        if self.starts:
            lines.append(f"{verb} the start of {len(self.starts)} partition(s) at the forward copy's end: "
                         f"{back:,} target offset(s) written since the cutover to copy back")
        if self.already_started:
            lines.append(f"{len(self.already_started)} partition(s) started before: they go on from their progress")
        if self.unfenced_topics:
            lines.append(("would lift" if self.dry_run else "lifted") + " the write fence of "
                         + ", ".join(self.unfenced_topics) + " on the source (the way back writes there)")
        return "\n".join(lines)


class Failback:
    """The way back of a forward plan; `source_config` and `target_config` are the forward plan's."""

    def __init__(self, plan: MigrationPlan, source_config: dict[str, str], target_config: dict[str, str]) -> None:
        check_failback_possible(plan)
        self.forward = plan
        self.source_config, self.target_config = source_config, target_config
        self.topics = self._switched_topics()
        self.plan = failback_plan(plan, self.topics)

    def client_configs(self) -> tuple[dict[str, str], dict[str, str]]:
        """The way back's (source, target) settings: the forward plan's, swapped. (Its plan's own `client_configs`
        would read a launcher's MIRROR_ENGINE_*_CONFIG, which name the forward plan's clusters.)"""
        return self.target_config, self.source_config

    def _switched_topics(self) -> list[str]:
        control = ControlChannel(self.forward, self.target_config)
        try:
            control.load()
        finally:
            control.close()
        topics = sorted(topic for topic in control.switched_topics if self.forward.replicates_topic(topic))
        if not topics:
            raise FailbackError(
                f"plan '{self.forward.name}' never switched producers (switch-producers): the target holds nothing "
                "the source lacks, so there is no way back to copy; move groups back with `switch-group "
                "--rollback`. Nothing was changed")
        return topics

    def prepare(self, dry_run: bool = False) -> FailbackPreparation:
        """Store where each partition's way back starts (once: a rerun keeps what was stored, and its engine's
        progress since) and lift the source's write fences of the topics; with `dry_run`, say it and change
        nothing."""
        source_admin, target_admin = admin_client(self.source_config), admin_client(self.target_config)
        topics = InternalTopics.for_plan(self.plan)
        stored = load_progress(self.source_config, topics.progress) \
            if existing_topics(source_admin, [topics.progress]) else {}
        partitions = self._partitions(source_admin, target_admin)
        fresh = [key for key in partitions if key not in stored]
        starts = self._starts(fresh, source_admin, target_admin) if fresh else []
        fenced = [acl.name for acl in fences_in_force(source_admin, [topic_write_fence(t) for t in self.topics])]
        preparation = FailbackPreparation(self.plan, starts, sorted(set(partitions) - set(fresh)), fenced, dry_run)
        if dry_run:
            return preparation
        for topic in fenced:
            remove_fence(source_admin, topic_write_fence(topic))
        if starts:
            ensure_internal_topics(source_admin, topics)
            writer = SideRecordWriter.for_ranges(self.source_config, topics, self.plan.source.alias,
                                                 self.plan.target.alias)
            writer.store_ranges([CopiedRange(s.topic, s.partition, s.target_position, s.source_end, s.syncs)
                                 for s in starts])
            log.info("the way back of %d partition(s) starts at the forward copy's end", len(starts))
        return preparation

    def _partitions(self, source_admin: AdminClient, target_admin: AdminClient) -> list[tuple[str, int]]:
        """Every partition of the switched topics, the same on both clusters; FailbackError naming a topic gone from
        either side, or partitioned differently."""
        on_source, on_target = metadata_of(source_admin, self.topics), metadata_of(target_admin, self.topics)
        partitions = []
        for topic in self.topics:
            for side, listing in (("source", on_source), ("target", on_target)):
                metadata = listing.get(topic)
                if metadata is None or metadata.error is not None:
                    raise FailbackError(f"topic {topic!r} of plan '{self.forward.name}' no longer exists on the "
                                        f"{side} ({self._alias(side)}): its records cannot go back. Nothing was "
                                        "changed")
            source_count, target_count = len(on_source[topic].partitions), len(on_target[topic].partitions)
            if source_count != target_count:
                raise FailbackError(f"topic {topic!r} has {source_count} partition(s) on the source and "
                                    f"{target_count} on the target: a partition's records go back to the partition "
                                    "they came from. Nothing was changed")
            partitions += [(topic, p) for p in range(source_count)]
        return partitions

    def _alias(self, side: str) -> str:
        return self.forward.source.alias if side == "source" else self.forward.target.alias

    def _starts(self, keys: list[tuple[str, int]], source_admin: AdminClient,
                target_admin: AdminClient) -> list[PartitionStart]:
        """Each partition's start: the forward flow's stored end on the target and its syncs turned around."""
        with FlowMapping(self.forward, self.target_config, keys) as mapping:
            mapping.refresh()
            progress, offsets = dict(mapping.progress), mapping.offsets
        tps = [TopicPartition(topic, partition) for topic, partition in keys]
        source_ends = list_offsets(source_admin, tps, OffsetSpec.latest())
        target_ends = list_offsets(target_admin, tps, OffsetSpec.latest())
        starts = []
        for key in keys:
            forward = progress.get(key)
            if forward is None or forward.target_position < 0:
                raise FailbackError(f"{key[0]}[{key[1]}]: plan '{self.forward.name}' stored no copy of this "
                                    "partition on the target: its way back has no start. Nothing was changed")
            partition_map = offsets.partition(*key)
            turned = [(down, up) for up, down in (partition_map.syncs() if partition_map is not None else [])]
            if source_ends[key] < forward.position:
                raise FailbackError(f"{key[0]}[{key[1]}] ends at {source_ends[key]} on the source, before the "
                                    f"{forward.position} records the forward flow copied: the source topic was "
                                    "truncated or recreated since the cutover. Nothing was changed")
            starts.append(PartitionStart(key[0], key[1], forward.target_position, target_ends[key],
                                         source_ends[key], turned))
        return starts


class GroupSwitcherBack(GroupSwitcher):
    """The switch of a group along the way back: the group's read fence the forward switch left on the source (this
    flow's target) is lifted right before its offsets are committed there."""

    def _before_commit(self, group: str) -> None:
        remove_fence(self.target_admin, group_fence(group))
