"""Checkpoints and group offset sync: consumer groups' source positions, exactly translated to the target.

As MirrorMaker 2's MirrorCheckpointConnector: for each of the plan's groups, its committed source offsets
are translated and written as MM2-format checkpoints (`<source alias>.checkpoints.internal` on the target),
and, with `cutover.sync_group_offsets`, committed to the same group on the target while that group has
no members there. Unlike MM2 the translation is exact (see `offset_map`), so a group switched at any
moment resumes on the target at the very record it would have read next on the source.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from confluent_kafka import Producer

from mirror_engine.flow import FlowMapping, InternalTopics, ensure_internal_topics
from mirror_engine.kafka import (
    GroupError,
    GroupState,
    TopicPartitionKey,
    admin_client,
    commit_offsets_of,
    committed_offsets_of,
    describe_groups,
    plan_groups,
)
from mirror_engine.mm2 import Checkpoint
from mirror_engine.plan import MigrationPlan, ReplicationPolicy

log = logging.getLogger(__name__)


@dataclass
class GroupTranslation:
    """One group's committed source offsets and what they translate to on the target."""

    group: str
    translated: dict[TopicPartitionKey, int] = field(default_factory=dict)  # (target topic, partition) -> offset
    upstream: dict[TopicPartitionKey, int] = field(default_factory=dict)  # (target topic, partition) -> source
    pending: dict[TopicPartitionKey, int] = field(default_factory=dict)  # source offsets not copied yet
    not_replicated: list[str] = field(default_factory=list)  # topics the group reads that the plan does not copy


@dataclass
class TargetGroups:
    """The target's side of a round's groups: each one's state there, and the committed offsets of those without
    members (the ones that may be given offsets)."""

    states: dict[str, GroupState | GroupError] = field(default_factory=dict)
    offsets: dict[str, dict[TopicPartitionKey, int] | GroupError] = field(default_factory=dict)


def translate_group(plan: MigrationPlan, mapping: FlowMapping, group: str,
                    source_offsets: dict[TopicPartitionKey, int],
                    remote: dict[str, str | None] | None = None,
                    returning: FlowMapping | None = None) -> GroupTranslation:
    """`remote`: each source topic's name on the target (None: not copied), filled as topics are met; a caller
    translating round after round keeps it (the plan's topic patterns matched once per topic, not once per group
    and round: they were a quarter of an idle engine's checkpoint thread at 1,000 groups, py-spy).

    `returning`: the mapping of the flow running the other way (`cutover.return_flow`). A source topic that is
    that flow's copy of a target topic (`<target alias>.orders`) is then translated back through it to the
    original topic (`orders`): a group that failed over to the source resumes on the target where it stopped."""
    policy = plan.policy()
    result = GroupTranslation(group)
    # Each topic's filter match and remote name once, not once per partition: a round of 1,000 groups spent 40% of
    # the process's time matching the plan's topic patterns (py-spy, 10,000 partitions).
    remote = {} if remote is None else remote
    for (topic, partition), offset in sorted(source_offsets.items()):
        if topic not in remote:
            remote[topic] = policy.format_remote_topic(plan.source.alias, topic) if plan.replicates_topic(topic) \
                else None
        remote_topic = remote[topic]
        if remote_topic is None and returning is not None and \
                (original := _returned_topic(policy, plan.target.alias, topic)) is not None:
            back = returning.reverse(original, partition, offset)
            if back is None:
                result.pending[(topic, partition)] = offset
            else:
                result.translated[(original, partition)] = back
                result.upstream[(original, partition)] = offset
            continue
        if remote_topic is None:
            if topic not in result.not_replicated:
                result.not_replicated.append(topic)
            continue
        target = mapping.translate(topic, partition, offset)
        if target is None:
            result.pending[(topic, partition)] = offset
            continue
        key = (remote_topic, partition)
        result.translated[key] = target
        result.upstream[key] = offset
    return result


def _returned_topic(policy: ReplicationPolicy, target_alias: str, topic: str) -> str | None:
    """The target topic that `topic` is a one-hop copy of, made by a flow from the target; None if it is none."""
    return policy.upstream_topic(topic) if policy.topic_source(topic) == target_alias else None


LOG_GROUPS = 10  # groups named in a round's log lines: those whose outcome changed since the last round


@dataclass
class GroupSyncResult:
    group: str
    checkpoints: int = 0
    committed: dict[TopicPartitionKey, int] = field(default_factory=dict)
    skipped: str = ""  # why nothing was committed on the target, if nothing was
    failed: bool = False  # `skipped` is an error a cluster gave (logged by `log_round`, with the round's others)
    kept_ahead: list[str] = field(default_factory=list)  # partitions where the target group was already further
    pending: int = 0  # partitions whose committed offset is not copied yet

    def outcome(self) -> tuple[str, int]:
        """What a log reader needs to see again only when it changes (commits are news every time)."""
        return self.skipped, self.pending


def log_round(results: list[GroupSyncResult], previous: dict[str, tuple[str, int]]) -> dict[str, tuple[str, int]]:
    """A round in the log: one summary line, then the groups that committed or whose outcome changed since
    `previous` (at most LOG_GROUPS of them, errors first and at ERROR): a few lines a round whatever the number of
    groups, even when a silent coordinator fails every group of the round. Returns the outcomes to pass as
    `previous` next round."""
    news = [r for r in results if r.committed or ((r.skipped or r.pending) and previous.get(r.group) != r.outcome())]
    news.sort(key=lambda r: not r.failed)
    log.info("checkpoint round: %d group(s), %d checkpoint(s) changed, %d group(s) with offsets committed on the "
             "target, %d waiting for records not copied yet, %d not synced (%d failed)", len(results),
             sum(r.checkpoints for r in results), sum(1 for r in results if r.committed),
             sum(1 for r in results if r.pending), sum(1 for r in results if r.skipped),
             sum(1 for r in results if r.failed))
    for result in news[:LOG_GROUPS]:
        log.log(logging.ERROR if result.failed else logging.INFO,
                "  group %s: %d checkpoint(s) changed, %d offset(s) committed on the target%s%s", result.group,
                result.checkpoints, len(result.committed),
                f", {result.pending} partition(s) not copied yet" if result.pending else "",
                f", not synced: {result.skipped}" if result.skipped else "")
    if len(news) > LOG_GROUPS:
        log.info("  ... and %d more group(s) committed or changed", len(news) - LOG_GROUPS)
    return {r.group: r.outcome() for r in results}


class Checkpointer:
    """Emits checkpoints and syncs group offsets for one plan, once per `run_once()` or on a timer (`run()`)."""

    def __init__(self, plan: MigrationPlan, source_config: dict[str, str], target_config: dict[str, str]) -> None:
        self.plan = plan
        self.source_admin = admin_client(source_config)
        self.target_admin = admin_client(target_config)
        self.topics = InternalTopics.for_plan(plan)
        ensure_internal_topics(self.target_admin, self.topics)
        self.mapping = FlowMapping(plan, target_config)
        # The return flow's mapping, kept by that flow on this flow's source (see `translate_group`).
        returning = InternalTopics.of_return_flow(plan)
        self.returning = None if returning is None else FlowMapping(plan, source_config, topics=returning)
        self.producer = Producer({**target_config, "enable.idempotence": True, "acks": "all", "linger.ms": 5})
        # The last checkpoint written of each (group, target topic, partition), as (upstream, downstream): as
        # MirrorMaker 2, one unchanged is not written again. A group that does not move then costs no record a
        # round (1,000 groups of 20 partitions wrote 20,000 a round into a compacted topic that every reader of
        # checkpoints reads from its start); a process that takes the lease writes each one once first.
        self._written: dict[tuple[str, str, int], tuple[int, int]] = {}
        self._remote_names: dict[str, str | None] = {}  # see `translate_group`
        self._stop = threading.Event()

    def close(self) -> None:
        self.mapping.close()
        if self.returning is not None:
            self.returning.close()
        self.producer.flush(30)

    def write_all_again(self) -> None:
        """Write every checkpoint at the next round, changed or not (this process just took the flow's lease:
        another may have written since it last did)."""
        self._written.clear()

    def groups(self) -> list[str]:
        """The source's groups the plan selects (MM2's groups filter) plus the ones named for cutover."""
        return plan_groups(self.source_admin, self.plan)

    def run_once(self, sync_offsets: bool | None = None, *, emit_checkpoints: bool = True,
                 groups: list[str] | None = None, keep_going: Callable[[], bool] | None = None,
                 write: bool = True) -> list[GroupSyncResult]:
        """One round: each group's checkpoints written (unless `emit_checkpoints` is false) and, with
        `sync_offsets` (default cutover.sync_group_offsets), its offsets committed on the target. `groups`
        (default: listed now) are the groups to translate; the round ends early once `keep_going()` is false.
        With `write` false nothing is written: each result says what the round would have done (`skipped` names
        the partitions of a group not yet at their translation on the target), for a reader while another
        process writes (`checkpoint_loop`).

        Batched: the groups are described in one request per cluster and their offsets asked and committed
        together, so a round of a thousand groups costs a few round trips, not four per group in sequence. The
        two clusters are asked side by side: the source for the groups' committed offsets, the target for the
        mapping's news and, when offsets are synced, the groups' state and offsets there (at 1,000 groups each
        side took about a second, one after the other)."""
        sync = self.plan.cutover.sync_group_offsets if sync_offsets is None else sync_offsets
        emit = emit_checkpoints and write
        names = self.groups() if groups is None else groups
        with ThreadPoolExecutor(1, thread_name_prefix="checkpoint-target") as pool:
            target_read = pool.submit(self._read_target, names if sync else [])
            source_offsets = self._source_offsets(names)
            target = target_read.result()
        results: dict[str, GroupSyncResult] = {}
        to_sync: dict[str, GroupTranslation] = {}
        written: dict[tuple[str, str, int], tuple[int, int]] = {}
        failed: set[tuple[str, str, int]] = set()
        for group, offsets in source_offsets.items():
            if isinstance(offsets, GroupError):  # one group's trouble must not stop the others
                results[group] = GroupSyncResult(group, skipped=str(offsets), failed=True)
                continue
            translation = translate_group(self.plan, self.mapping, group, offsets, self._remote_names,
                                          self.returning)
            result = results[group] = GroupSyncResult(group, pending=len(translation.pending))
            for (topic, partition), downstream in translation.translated.items() if emit else ():
                key, pair = (group, topic, partition), (translation.upstream[(topic, partition)], downstream)
                if self._written.get(key) == pair:
                    continue
                checkpoint = Checkpoint(group, topic, partition, *pair)
                self.producer.produce(self.topics.checkpoints, checkpoint.record_value(), checkpoint.record_key(), 0,
                                      on_delivery=lambda error, _message, key=key: failed.add(key) if error else None)
                written[key] = pair
                result.checkpoints += 1
            self.producer.poll(0)
            if sync and translation.translated:
                to_sync[group] = translation
            else:
                result.skipped = "" if sync else "group offset sync is off"
        if to_sync and (keep_going is None or keep_going()):
            self._sync_offsets(to_sync, target, results, write, keep_going)
        if self.producer.flush(30):
            raise RuntimeError(f"the target did not acknowledge the checkpoints written to {self.topics.checkpoints}")
        self._written.update((key, pair) for key, pair in written.items() if key not in failed)
        return [results[group] for group in names if group in results]

    def _source_offsets(self, groups: list[str]) -> dict[str, dict[TopicPartitionKey, int] | GroupError]:
        """Each group's committed source offsets, asked only of groups whose description answered (librdkafka
        2.16 crashes on an offset fetch answered by a coordinator that is loading, see `committed_offsets`)."""
        if self.returning is not None:  # its news before the offsets: a position it copied since is not pending
            self.returning.refresh()
        states = describe_groups(self.source_admin, groups)
        described = [group for group in groups if not isinstance(states[group], GroupError)]
        offsets = committed_offsets_of(self.source_admin, described)
        answers: dict[str, dict[TopicPartitionKey, int] | GroupError] = {}
        for group in groups:
            state = states[group]
            answers[group] = state if isinstance(state, GroupError) else offsets[group]
        return answers

    def _read_target(self, groups: list[str]) -> TargetGroups:
        """The mapping's news, then `groups`' state on the target and the committed offsets of those without
        members there (asked only of groups just described, as `_source_offsets`)."""
        self.mapping.refresh()
        states = describe_groups(self.target_admin, groups) if groups else {}
        idle = [group for group, state in states.items() if not isinstance(state, GroupError) and not state.active]
        return TargetGroups(states, committed_offsets_of(self.target_admin, idle) if idle else {})

    def _sync_offsets(self, translations: dict[str, GroupTranslation], target: TargetGroups,
                      results: dict[str, GroupSyncResult], write: bool, keep_going: Callable[[], bool] | None) -> None:
        """Commit the translations on the target for the groups without members there, never backwards."""
        idle = []
        for group in translations:
            state = target.states[group]
            if isinstance(state, GroupError):
                results[group].skipped, results[group].failed = str(state), True
            elif state.active:
                # As MM2: never move offsets under consumers that are running on the target.
                results[group].skipped = f"the group has {state.members} active member(s) on the target"
            else:
                idle.append(group)
        wanted_by_group: dict[str, dict[TopicPartitionKey, int]] = {}
        for group in idle:
            current, result = target.offsets[group], results[group]
            if isinstance(current, GroupError):
                result.skipped, result.failed = str(current), True
                continue
            wanted = {}
            for key, offset in translations[group].translated.items():
                if current.get(key, -1) > offset:
                    result.kept_ahead.append(f"{key[0]}[{key[1]}]")  # never backwards: it consumed on the target
                elif current.get(key) != offset:
                    wanted[key] = offset
            if not write:
                result.skipped = (f"{len(wanted)} partition(s) not at their translation on the target yet"
                                  if wanted else "")
            elif wanted:
                wanted_by_group[group] = wanted
        if not wanted_by_group or (keep_going is not None and not keep_going()):
            return
        for group, outcome in commit_offsets_of(self.target_admin, wanted_by_group).items():
            if isinstance(outcome, GroupError):
                results[group].skipped = f"{outcome} (a group with members on the target cannot be given offsets)"
                results[group].failed = True
            else:
                results[group].committed = wanted_by_group[group]

    def stop(self) -> None:
        self._stop.set()

    def run(self, max_seconds: float | None = None) -> None:
        """Checkpoint every `cutover.checkpoint_interval_s` until stopped."""
        import time

        started = time.monotonic()
        outcomes: dict[str, tuple[str, int]] = {}
        while not self._stop.is_set():
            outcomes = log_round(self.run_once(), outcomes)
            if max_seconds is not None and time.monotonic() - started >= max_seconds:
                return
            self._stop.wait(self.plan.cutover.checkpoint_interval_s)
