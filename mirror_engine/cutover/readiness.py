"""What each step of a migration waits for, asked one poll at a time: the conditions behind Airflow's sensors, and
the registry of checks a sensor names (`CHECKS`, `build_check`). The checks of the switches, which the switches
poll too, are in `ready_to_switch`; what a check answers is `readiness_base`.

The sensors' triggers call nothing else; whatever a check learns stays here, in the domain.
"""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import KafkaException

from mirror_engine.cutover.catch_up import (
    FROM_PLAN,
    CatchUpBounds,
    CatchUpGate,
    LagSample,
    TimeBehind,
    catch_up_sentence,
)
from mirror_engine.cutover.checkpoint_loop import lease_holder
from mirror_engine.cutover.checkpoints import Checkpointer
from mirror_engine.cutover.outlook import BLOCKED, NOTHING_TO_SWITCH, SKIP, switch_outlook
from mirror_engine.cutover.readiness_base import SHOWN, Readiness, ReadinessCheck, named
from mirror_engine.cutover.ready_to_switch import GroupReadyToSwitch, GroupsReadyToSwitch, TopicReadyToSwitch
from mirror_engine.cutover.schema_readiness import RegistriesAnswer, SchemasOnTarget
from mirror_engine.kafka import (
    GroupError,
    GroupState,
    TopicPartitionKey,
    admin_client,
    cluster_identity,
    describe_groups,
)
from mirror_engine.observe import assigned_partitions, flow_problems, partition_count
from mirror_engine.plan import MigrationPlan


class ClustersAnswer(ReadinessCheck):
    """Both clusters answer (`cluster_identity`; a cluster still starting is waited for)."""

    def __init__(self, plan: MigrationPlan, source_config: dict[str, str], target_config: dict[str, str]) -> None:
        super().__init__(plan, source_config, target_config)
        self._admins = {plan.source.alias: admin_client(source_config), plan.target.alias: admin_client(target_config)}
        self._bootstrap = {plan.source.alias: source_config.get("bootstrap.servers"),
                           plan.target.alias: target_config.get("bootstrap.servers")}

    def check(self) -> Readiness:
        answers, silent = {}, []
        for alias, admin in self._admins.items():
            try:
                cluster_id, brokers = cluster_identity(admin, 5)
                answers[alias] = {"cluster_id": cluster_id, "brokers": len(brokers)}
            except KafkaException as error:
                silent.append(f"'{alias}' at {self._bootstrap[alias]} ({error.args[0].str()})")
        if silent:
            return Readiness(False, "waiting for cluster " + " and ".join(silent) + " to answer")
        ids = {alias: answer["cluster_id"] for alias, answer in answers.items()}
        if len(set(ids.values())) == 1:
            return Readiness(False, "", failed=f"source '{self.plan.source.alias}' and target "
                             f"'{self.plan.target.alias}' are the same cluster (id {next(iter(ids.values()))}): "
                             "records would be copied onto themselves")
        return Readiness(True, "both clusters answer: " + ", ".join(
            f"'{alias}' id {a['cluster_id']} with {a['brokers']} broker(s)" for alias, a in answers.items()),
            detail=answers)


class EngineCopying(ReadinessCheck):
    """A live engine of the flow copies every partition the flow should be copying (from the status topic);
    partitions held for their Spark backfill are not expected to be copied yet."""

    def check(self) -> Readiness:
        watch = self.watch
        watch.refresh()
        live = watch.live_statuses()
        problems = flow_problems(live)
        if problems:
            return Readiness(False, "", failed="the flow's engines report partitions they cannot copy: "
                             + "; ".join(problems[:SHOWN]))
        planned = {key for key in watch.planned_partitions() if not self._held_for_backfill(key[0])}
        if not live:
            return Readiness(False, "waiting for an engine of the flow to publish its status (none live yet)")
        running = [status for status in live if status["state"] == "running"]
        assigned = [assigned_partitions(status) for status in running]
        if any(partitions is None for partitions in assigned):
            # A worker too large to list its assignment in a status record: its count stands for it.
            count = sum(partition_count(status) for status in running)
            if count < len(planned):
                return Readiness(False, f"{len(live)} live engine(s) copy {count} of {len(planned)} partition(s)")
            copying = planned
        else:
            copying = set().union(*[partitions for partitions in assigned if partitions is not None])
        paused = [status["worker"] for status in live if status["state"] != "running"]
        missing = sorted(planned - copying)
        if missing or paused:
            return Readiness(False, f"{len(live)} live engine(s) copy {len(planned & copying)} of {len(planned)} "
                             f"partition(s)" + (f"; not copied yet: {named([f'{t}[{p}]' for t, p in missing])}"
                                                if missing else "")
                             + (f"; the flow is {live[0]['state']} on {named(paused)}" if paused else ""))
        return Readiness(True, f"{len(live)} live engine(s) copy all {len(planned)} partition(s)",
                         detail={"engines": len(live), "partitions": len(planned)})

    def _held_for_backfill(self, topic: str) -> bool:
        snapshot = self.watch.control.backfills.get(topic)
        return self.plan.backfills_topic(topic) and (snapshot is None or snapshot.state != "done")


class BackfillDone(ReadinessCheck):
    """Every partition held for the Spark backfill was copied up to its snapshot offset and handed back."""

    def check(self) -> Readiness:
        watch = self.watch
        watch.refresh()
        topics = sorted(t for t in watch.source_admin.list_topics(timeout=15).topics if self.plan.backfills_topic(t))
        waiting, done = [], 0
        for topic in topics:
            snapshot = watch.control.backfills.get(topic)
            if snapshot is None:
                waiting.append(f"{topic} (no engine has recorded its snapshot yet)")
                continue
            for partition, (snapshot_offset, _target_start) in sorted(snapshot.partitions.items()):
                position = watch.mapping.copied_position(topic, partition)
                if snapshot.state == "done" and position is not None and position >= snapshot_offset:
                    done += 1
                else:
                    waiting.append(f"{topic}[{partition}] copied to {position if position is not None else '-'} "
                                   f"of {snapshot_offset}")
        if waiting:
            return Readiness(False, f"backfill: {done} partition(s) done; waiting for {named(waiting)}")
        return Readiness(True, f"backfill done: {done} partition(s) of {len(topics)} topic(s) at their snapshot",
                         detail={"partitions": done})


class LagAtMost(ReadinessCheck):
    """The catch-up gate (`catch_up`): the flow's lag, from its stored progress, under the plan's bounds in
    records or time behind, held while the engine keeps up; lag 0 at once. A stopped partition fails it.

    `max_lag` (records), `max_lag_s` (None: no time bound) and `settle_s` override the plan's cutover settings."""

    def __init__(self, plan: MigrationPlan, source_config: dict[str, str], target_config: dict[str, str],
                 max_lag: int | None = None, max_lag_s: float | str | None = FROM_PLAN,
                 settle_s: float | None = None) -> None:
        super().__init__(plan, source_config, target_config)
        self.bounds = CatchUpBounds.from_plan(plan, max_lag, max_lag_s, settle_s)
        self.gate = CatchUpGate(self.bounds)
        self._times: TimeBehind | None = None

    def _behind_s(self, ends: dict[TopicPartitionKey, int], lag: dict[TopicPartitionKey, int]) -> float | None:
        if self.bounds.max_lag_s is None:
            return None
        if self._times is None:
            self._times = TimeBehind(self.source_config)
        return self._times.behind_s({key: end - lag[key] for key, end in ends.items()}, lag)

    def check(self) -> Readiness:
        watch = self.watch
        watch.refresh()
        ends = watch.planned_partitions()
        lag = watch.lag(ends)
        total = sum(lag.values())
        sample = LagSample(time.monotonic(), total, self._behind_s(ends, lag) if total else 0.0, sum(ends.values()))
        passed = self.gate.observe(sample)
        sentence = catch_up_sentence(self.bounds, sample, self.gate.trend(), self.gate.held_s(), passed)
        detail = {"lag": total, "behind_s": None if sample.behind_s is None else round(sample.behind_s, 1)}
        if passed:
            return Readiness(True, sentence, detail=detail)
        live = watch.live_statuses()
        problems = flow_problems(live)
        if problems:
            return Readiness(False, "", failed=f"lag {total:,} record(s), and the flow's engines report partitions "
                             "they cannot copy: " + "; ".join(problems[:SHOWN]), detail=detail)
        behind = sorted(((n, f"{t}[{p}] {n:,}") for (t, p), n in lag.items() if n), reverse=True)
        engines = f"{len(live)} live engine(s)" if live else "no live engine of the flow (is one running?)"
        return Readiness(False, f"{sentence}; {engines}; most behind: {named([text for _n, text in behind])}",
                         detail=detail)

    def close(self) -> None:
        if self._times is not None:
            self._times.close()
        super().close()


class CheckpointsCurrent(ReadinessCheck):
    """Each poll runs one checkpoint round (checkpoints written, offsets synced into groups idle on the target,
    as MirrorMaker 2's checkpoint task does on its timer) and reports whether every group the plan selects is
    current on the target: its offsets there are the exact translation of its source offsets. Groups still
    consuming on either cluster move on their own and are named, not waited for. While another process holds
    the flow's checkpoint lease (a `run` or `worker` with engine.run_checkpoints, or `checkpoint`), the round
    only reads: that process writes, and this check waits for it (`checkpoint_loop`)."""

    def __init__(self, plan: MigrationPlan, source_config: dict[str, str], target_config: dict[str, str],
                 groups: list[str] | None = None) -> None:
        super().__init__(plan, source_config, target_config)
        self.groups = groups  # the groups the run switches (None: the plan's cutover.groups)
        self._checkpointer: Checkpointer | None = None

    def check(self) -> Readiness:
        if self._checkpointer is None:
            self._checkpointer = Checkpointer(self.plan, self.source_config, self.target_config)
        # What the switch will do with each of the run's groups, said now: a group that can only fail stops the
        # run here, before any approval is asked (`outlook`).
        to_switch = list(self.plan.cutover.groups if self.groups is None else self.groups)
        try:
            outlooks = switch_outlook(self.plan, self._checkpointer.source_admin, self._checkpointer.target_admin,
                                      self.target_config, to_switch) if to_switch else []
        except GroupError as error:  # a coordinator still loading (a new cluster's first groups): asked again
            return Readiness(False, f"what the switch will do with the run's groups is not known yet: {error}")
        blocked = [o for o in outlooks if o.verdict == BLOCKED]
        if blocked:
            return Readiness(False, "", failed=f"{len(blocked)} group(s) of the run can only fail to switch: "
                             + named([f"{o.group} ({o.reason})" for o in blocked]))
        holder = lease_holder(self._checkpointer.target_admin, self.plan)
        results = self._checkpointer.run_once(write=holder is None)
        behind, moving, current = [], [], []
        # Whether a group still consumes on the source, asked of the groups it matters for in one request per
        # coordinator (one request per group in sequence took seconds at 1,000 groups, every poll).
        unsettled = [r.group for r in results if not r.pending and "active member" not in r.skipped]
        on_source = describe_groups(self._checkpointer.source_admin, unsettled)
        for result in results:
            if result.pending:
                behind.append(f"{result.group} ({result.pending} partition(s) not copied up to its offsets yet)")
            elif result.skipped and "active member" in result.skipped:
                moving.append(f"{result.group} (consuming on the target)")
            elif _consuming(on_source[result.group]):
                moving.append(f"{result.group} (consuming on the source)")
            elif result.skipped and result.skipped != "group offset sync is off":
                behind.append(f"{result.group} ({result.skipped})")
            else:
                current.append(result.group)
        progress = f"{len(current)} group(s) current on the target"
        if holder is not None:
            progress += f" (written by the flow's checkpoint loop in {holder})"
        if moving:
            progress += f"; still consuming, not waited for: {named(moving)}"
        skipped = [o for o in outlooks if o.verdict == SKIP]
        if skipped:
            progress += f"; nothing to switch, skipped: {named([o.group for o in skipped])} ({NOTHING_TO_SWITCH})"
        if behind:
            return Readiness(False, progress + f"; waiting for {named(behind)}")
        return Readiness(True, progress, detail={"current": current, "consuming": len(moving),
                                                 "skipped": [o.group for o in skipped]})

    def close(self) -> None:
        if self._checkpointer is not None:
            self._checkpointer.close()
        super().close()




def _consuming(state: GroupState | GroupError) -> bool:
    """Whether a described group has members; a group that could not be described stops the poll, as it did."""
    if isinstance(state, GroupError):
        raise state
    return state.active


# The checks a sensor may name (by these keys, so that a trigger serializes to plain strings).
CHECKS: dict[str, type[ReadinessCheck]] = {
    "clusters_answer": ClustersAnswer,
    "engine_copying": EngineCopying,
    "backfill_done": BackfillDone,
    "lag_at_most": LagAtMost,
    "checkpoints_current": CheckpointsCurrent,
    "group_ready_to_switch": GroupReadyToSwitch,
    "groups_ready_to_switch": GroupsReadyToSwitch,
    "topic_ready_to_switch": TopicReadyToSwitch,
    "registries_answer": RegistriesAnswer,
    "schemas_on_target": SchemasOnTarget,
}


def build_check(name: str, plan: MigrationPlan, source_config: dict[str, str], target_config: dict[str, str],
                arguments: dict[str, Any]) -> ReadinessCheck:
    if name not in CHECKS:
        raise ValueError(f"unknown readiness check {name!r}; known: {', '.join(CHECKS)}")
    return CHECKS[name](plan, source_config, target_config, **arguments)

