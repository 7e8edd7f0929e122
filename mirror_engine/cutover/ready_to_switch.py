"""Whether a group or a topic's producers can switch now: the one definition of "ready" that the sensors defer on
and the switches poll (`group_switch`, `producer_switch`)."""

from __future__ import annotations

import time

from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from mirror_engine.cutover.checkpoints import GroupTranslation, translate_group
from mirror_engine.cutover.outlook import SWITCH, group_verdict
from mirror_engine.cutover.readiness_base import RUN_FENCE, Readiness, ReadinessCheck, acl_in_force, named
from mirror_engine.cutover.switched import group_already_switched
from mirror_engine.flow import FlowMapping
from mirror_engine.kafka import (
    GroupError,
    TopicPartitionKey,
    admin_client,
    committed_offsets,
    describe_group,
    fence_problem,
    group_fence,
    is_engine_group,
    list_offsets,
    topic_write_fence,
)
from mirror_engine.observe import FlowWatch, ReportStore
from mirror_engine.plan import MigrationPlan


class GroupStopped(ReadinessCheck):
    """A group has no members on one side (`on`: "source" or "target"): what a switch, and a rollback, wait for
    before they read the group's offsets there."""

    def __init__(self, plan: MigrationPlan, source_config: dict[str, str], target_config: dict[str, str],
                 group: str = "", on: str = "source") -> None:
        super().__init__(plan, source_config, target_config)
        self.group, self.on = group, on
        self._admin: AdminClient | None = None

    def check(self) -> Readiness:
        if self._admin is None:
            self._admin = admin_client(self.source_config if self.on == "source" else self.target_config)
        return group_stopped(self._admin, self.group, self.on)


def group_stopped(admin: AdminClient, group: str, on: str) -> Readiness:
    """`GroupStopped`'s answer, from the cluster `on` names."""
    members = describe_group(admin, group).members
    if members:
        return Readiness(False, f"group {group}: waiting for its {members} member(s) on the {on} to stop")
    return Readiness(True, f"group {group}: no members on the {on}", detail={"group": group})


class GroupReadyToSwitch(ReadinessCheck):
    """A group can be switched now: no members on the source (fenced there, when asked), none on the target,
    and the engine copied past every offset it committed.

    What the last poll saw stays readable, for the switch that polls this check: `final` (the group's committed
    source offsets) and `translation` (their exact translation) once the group stopped, `stopped_at` (the
    monotonic time the group was first seen stopped, None while it has members) and `switched_before` (done
    because the group's finished switch is stored)."""

    def __init__(self, plan: MigrationPlan, source_config: dict[str, str], target_config: dict[str, str],
                 group: str = "", fence: bool = False, watch: FlowWatch | None = None,
                 reports: ReportStore | None = None) -> None:
        super().__init__(plan, source_config, target_config, watch)
        self.group, self.fence = group, fence
        self.reports = reports  # the flow's stored reports, read through this store when given (a batch's)
        self.final: dict[TopicPartitionKey, int] = {}
        self.translation: GroupTranslation | None = None
        self.stopped_at: float | None = None
        self.switched_before = False
        self._group_mapping: FlowMapping | None = None  # the group's own partitions' mapping, without a shared watch

    def check(self) -> Readiness:
        group, watch = self.group, self.watch
        if is_engine_group(group):
            return Readiness(False, "", failed=f"{group!r} is a replication engine's own group: it is never switched")
        try:
            if describe_group(watch.target_admin, group).active:
                if not describe_group(watch.source_admin, group).active and group_already_switched(
                        self.plan, self.target_config, group, committed_offsets(watch.source_admin, group),
                        self.reports):
                    self.switched_before = True
                    return Readiness(True, f"group {group}: already switched to the target (its stored report "
                                     "proves it): nothing to wait for", detail={"group": group})
                return Readiness(False, "", failed=f"group {group!r} already has active members on the target")
            if self.fence and not acl_in_force(watch.source_admin, group_fence(group)):
                problem = fence_problem(watch.source_admin, self.plan.source.alias, f"group '{group}'", RUN_FENCE)
                if problem:
                    return Readiness(False, "", failed=problem)
                return Readiness(False, f"group {group}: waiting for its fence (DENY READ) on the source")
            stopped = group_stopped(watch.source_admin, group, "source")
            if not stopped.done:
                self.stopped_at = None
                return stopped
            if self.stopped_at is None:
                self.stopped_at = time.monotonic()
            final = committed_offsets(watch.source_admin, group)
        except GroupError as error:
            return Readiness(False, f"group {group}: {error}")
        not_replicated = sorted({topic for topic, _ in final if not self.plan.replicates_topic(topic)})
        outlook = group_verdict(group, committed=final, not_replicated=not_replicated)
        if outlook.verdict != SWITCH:  # it stopped with nothing to switch, or can only fail: `outlook` says which
            return Readiness(False, "", failed=outlook.sentence(), detail={"verdict": outlook.verdict})
        mapping = self._mapping_of(final)
        translation = translate_group(self.plan, mapping, group, final)
        self.final, self.translation = final, translation
        if translation.pending:
            return Readiness(False, f"group {group}: stopped on the source; waiting for the engine to copy past "
                             + named([f"{t}[{p}] offset {o:,} (copied to "
                                      f"{mapping.copied_position(t, p) or 0:,})"
                                      for (t, p), o in sorted(translation.pending.items())]))
        return Readiness(True, f"group {group}: stopped on the source and copied past its offsets on "
                         f"{len(final)} partition(s)", detail={"group": group, "partitions": len(final)})

    def _mapping_of(self, final: dict[TopicPartitionKey, int]) -> FlowMapping:
        """The flow's mapping, refreshed (only the mapping: what a switch waits for does not depend on the rest).
        The watch's when one was given (the groups of a batch share it); else one that keeps this group's partitions
        only (`FlowMapping`), made anew should the group have come to read others meanwhile."""
        if not self._owns_watch:
            return self.watch.mapping.refresh()
        mapping = self._group_mapping
        if mapping is None or not mapping.partitions or not set(final) <= mapping.partitions:
            if mapping is not None:
                mapping.close()
            mapping = self._group_mapping = FlowMapping(self.plan, self.target_config, final)
        return mapping.refresh()

    def close(self) -> None:
        if self._group_mapping is not None:
            self._group_mapping.close()
        super().close()


class TopicReadyToSwitch(ReadinessCheck):
    """A topic's producers can switch: nothing written on the source for `idle_s` (with `fence`, also its write
    fence in force there) and the engine copied it to its end.

    What the last poll saw stays readable, for the switch that polls this check: `ends` (the source's end offset
    per partition), `copied` (the engine's copied position per partition) and `idle_at` (the monotonic time the
    topic was first seen idle for `idle_s`, None while it is not)."""

    def __init__(self, plan: MigrationPlan, source_config: dict[str, str], target_config: dict[str, str],
                 topic: str = "", idle_s: float = 30.0, fence: bool = False) -> None:
        super().__init__(plan, source_config, target_config)
        self.topic, self.idle_s, self.fence = topic, idle_s, fence
        self.ends: dict[TopicPartitionKey, int] | None = None
        self.copied: dict[int, int] = {}
        self.idle_at: float | None = None
        self._quiet_since = 0.0

    def check(self) -> Readiness:
        topic, watch = self.topic, self.watch
        if not self.plan.replicates_topic(topic):
            return Readiness(False, "", failed=f"topic {topic!r} is not copied by plan '{self.plan.name}'")
        metadata = watch.source_admin.list_topics(topic, timeout=15).topics.get(topic)
        if metadata is None or metadata.error is not None:
            return Readiness(False, "", failed=f"topic {topic!r} does not exist on the source")
        if self.fence and not acl_in_force(watch.source_admin, topic_write_fence(topic)):
            problem = fence_problem(watch.source_admin, self.plan.source.alias, f"topic '{topic}'", RUN_FENCE)
            if problem:
                return Readiness(False, "", failed=problem)
            return Readiness(False, f"topic {topic}: waiting for its write fence on the source")
        ends = list_offsets(watch.source_admin, [TopicPartition(topic, p) for p in sorted(metadata.partitions)],
                            OffsetSpec.latest())
        now = time.monotonic()
        if ends != self.ends:
            self.ends, self._quiet_since, self.idle_at = ends, now, None
        quiet = now - self._quiet_since
        watch.mapping.refresh()  # only the mapping: what a switch waits for does not depend on the rest
        self.copied = {p: int(watch.mapping.copied_position(t, p) or 0) for (t, p) in ends}
        behind = [f"{t}[{p}] copied to {self.copied[p]:,} of {end:,}"
                  for (t, p), end in sorted(ends.items()) if self.copied[p] < end]
        if quiet < self.idle_s:
            return Readiness(False, f"topic {topic}: no write on the source for {quiet:.0f} s of {self.idle_s:.0f} s"
                             + (f"; {len(behind)} partition(s) still being copied" if behind else ""))
        if self.idle_at is None:
            self.idle_at = now
        if behind:
            return Readiness(False, f"topic {topic}: idle on the source; waiting for the copy of {named(behind)}")
        return Readiness(True, f"topic {topic}: idle on the source {quiet:.0f} s and copied to its end",
                         detail={"topic": topic, "end_offsets": {str(p): o for (_t, p), o in ends.items()}})


class GroupsReadyToSwitch(ReadinessCheck):
    """Some of several groups can be switched now: done as soon as one of `groups` is ready to switch
    (`GroupReadyToSwitch`, each group's own answer) or never can be, so that the task switching the batch switches
    those and waits again for the others. The progress line counts the groups still waiting and names a few, each
    with what it waits for; `detail` lists the ready groups and the reasons of those that never can switch."""

    def __init__(self, plan: MigrationPlan, source_config: dict[str, str], target_config: dict[str, str],
                 groups: list[str] | tuple[str, ...] = (), fence: bool = False) -> None:
        super().__init__(plan, source_config, target_config)
        self.groups, self.fence = list(groups), fence
        self._checks: dict[str, GroupReadyToSwitch] = {}

    def check(self) -> Readiness:
        if not self._checks:
            self._checks = {group: GroupReadyToSwitch(self.plan, self.source_config, self.target_config, group,
                                                      fence=self.fence, watch=self.watch) for group in self.groups}
        answers = {group: check.check() for group, check in self._checks.items()}
        ready = sorted(group for group, answer in answers.items() if answer.done)
        failed = {group: answer.failed for group, answer in sorted(answers.items()) if answer.failed}
        waiting = [answer.progress for answer in answers.values() if not answer.done and not answer.failed]
        if ready or failed:
            return Readiness(True, f"{len(ready)} of {len(answers)} group(s) ready to switch"
                             + (f", {len(failed)} never can ({named(list(failed))})" if failed else "")
                             + (f"; {len(waiting)} still waiting" if waiting else ""),
                             detail={"ready": ready, "failed": failed})
        return Readiness(False, f"{len(waiting)} group(s) waiting: {named(waiting)}")
