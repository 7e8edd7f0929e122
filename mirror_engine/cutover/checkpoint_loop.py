"""The checkpoint loop: MirrorMaker 2's checkpoint connector, beside the copy (`run`, `worker`) or alone
(`checkpoint`).

Its tasks, each with MM2's switch and interval from the plan's `cutover` section:
- checkpoints (`emit_checkpoints`, every `checkpoint_interval_s`): each group's exactly translated offsets
  written as MM2 checkpoints to `<source alias>.checkpoints.internal` on the target;
- group offset sync (`sync_group_offsets`, every `sync_group_offsets_interval_s`, or with each checkpoint round
  when that is null): the translation committed to the same group on the target while it has no members there,
  never backwards;
- group refresh (`refresh_groups`, every `refresh_groups_interval_s`): the source's groups the plan selects,
  listed again (null: at every round; off: once, at the first round).

One writer per flow, whatever runs. Every process that may write a flow's checkpoints and group offsets (`run`
or `worker` with `engine.run_checkpoints`, and `checkpoint`) joins the consumer group
`mirror-engine.checkpoints.<plan>` on the target (`CheckpointLease`), subscribed to the flow's checkpoints topic,
which has one partition: the member the group gives that partition holds the lease and is the only one that
writes; the others stand by. Assignment is cooperative-sticky, so a process joining later never takes the lease
from a live holder; when the holder stops it leaves the group and a standby takes over at once, when it dies
the group drops it after `engine.session_timeout_s`. So several workers of a flow run one checkpoint loop
between them (not one per partition share: a group's offsets are one decision), and a `checkpoint` started
beside a `run` that runs the loop waits instead of writing the same groups. A round polls the lease before each
group and stops writing as soon as the lease is gone.
"""

from __future__ import annotations

import logging
import time

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from mirror_engine.cutover.checkpoints import Checkpointer, GroupSyncResult, log_round
from mirror_engine.flow import InternalTopics, checkpoint_lease_group
from mirror_engine.kafka import admin_client, group_description, hold_assignment, leave_group
from mirror_engine.plan import MigrationPlan
from mirror_engine.scheduler import PeriodicTask, Scheduler

log = logging.getLogger(__name__)

__all__ = ["CheckpointLease", "CheckpointLoop", "LeaseRefused", "lease_holder"]

LEASE_POLL_S = 0.5  # how often the group's callbacks are served between rounds


class LeaseRefused(RuntimeError):
    """Another process holds the flow's checkpoint lease; the message names it."""


class CheckpointLease:
    """Membership in the flow's checkpoint lease group on the target; `held` while this process may write."""

    def __init__(self, plan: MigrationPlan, target_config: dict[str, str], holder: str) -> None:
        self.plan = plan
        self.group = checkpoint_lease_group(plan)
        self.topic = InternalTopics.for_plan(plan).checkpoints
        self.holder = holder
        self._target_config = target_config
        self._held = False
        session_ms = int(plan.engine.session_timeout_s * 1000)
        self._consumer = Consumer({
            **target_config, "group.id": self.group, "client.id": holder, "enable.auto.commit": False,
            "auto.offset.reset": "latest", "partition.assignment.strategy": "cooperative-sticky",
            "session.timeout.ms": session_ms, "heartbeat.interval.ms": max(100, session_ms // 4),
        })
        self._consumer.subscribe([self.topic], on_assign=self._assigned, on_revoke=self._revoked,
                                 on_lost=self._revoked)
        self._closed = False

    @property
    def held(self) -> bool:
        return self._held and not self._closed

    def poll(self, timeout_s: float = 0.0) -> bool:
        """Serve the group's callbacks (the lease may come or go here); True while this process holds it."""
        if self._closed:
            return False
        self._consumer.poll(timeout_s)  # the partition is paused: nothing is fetched
        return self._held

    def acquire(self, timeout_s: float) -> None:
        """Wait until this process holds the lease; LeaseRefused naming the holder after `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while not self.poll(0.2):
            if time.monotonic() > deadline:
                raise LeaseRefused(f"the checkpoints and group offsets of plan '{self.plan.name}' are written by "
                                   f"{self.describe_holder()}: this process wrote nothing (stop that one first to "
                                   "write them from here)")

    def describe_holder(self) -> str:
        """Who holds the lease now, as its group members describe themselves."""
        admin = admin_client(self._target_config)
        try:
            holder = lease_holder(admin, self.plan, exclude_member=self._consumer.memberid())
        except KafkaException as error:
            return f"another process (its group {self.group} could not be described: {error.args[0].str()})"
        return holder or f"no process yet (group {self.group} is still assigning the lease)"

    def close(self) -> None:
        """Leave the group: a standby process takes the lease over at once."""
        if not self._closed:
            leave_group(self._consumer)  # the revocation's callback drops the lease
            self._closed = True

    def _assigned(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        if not partitions:
            return
        hold_assignment(consumer, partitions)  # the lease is the assignment, the records are not needed
        self._held = True
        log.info("checkpoint lease of plan '%s' taken by %s: this process writes the flow's checkpoints and "
                 "group offsets", self.plan.name, self.holder)

    def _revoked(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        if any(tp.topic == self.topic for tp in partitions) and self._held:
            self._held = False
            log.info("checkpoint lease of plan '%s' given up by %s", self.plan.name, self.holder)


def lease_holder(admin: AdminClient, plan: MigrationPlan, exclude_member: str | None = None) -> str | None:
    """The process holding the flow's checkpoint lease (its client id and host), or None when none does."""
    group, topic = checkpoint_lease_group(plan), InternalTopics.for_plan(plan).checkpoints
    description = group_description(admin, group, 10)
    holders = [member for member in description.members if member.member_id != exclude_member
               and any(tp.topic == topic for tp in member.assignment.topic_partitions)]
    return ", ".join(f"'{member.client_id}' on {member.host.lstrip('/')}" for member in holders) or None


class CheckpointLoop:
    """The checkpoint tasks of one plan, written only while this process holds the flow's lease."""

    def __init__(self, plan: MigrationPlan, source_config: dict[str, str], target_config: dict[str, str], *,
                 holder: str) -> None:
        self.plan = plan
        self.checkpointer = Checkpointer(plan, source_config, target_config)
        self.lease = CheckpointLease(plan, target_config, holder)
        self.scheduler = Scheduler(self._tasks(), name=f"checkpoints-{plan.name}")
        self.last_results: list[GroupSyncResult] = []
        self._groups: list[str] | None = None  # the groups listed last (None: list them at the next round)
        self._outcomes: dict[str, tuple[str, int]] = {}  # each group's outcome at the last round, for the log

    # ------------------------------------------------------------------ tasks
    def _tasks(self) -> list[PeriodicTask]:
        cutover = self.plan.cutover
        separate_sync = cutover.sync_group_offsets and cutover.sync_group_offsets_interval_s is not None
        tasks = [PeriodicTask("lease", LEASE_POLL_S, self._poll_lease)]
        if cutover.emit_checkpoints or (cutover.sync_group_offsets and not separate_sync):
            sync_here = cutover.sync_group_offsets and not separate_sync
            tasks.append(PeriodicTask("checkpoints", cutover.checkpoint_interval_s,
                                      lambda: self._round(emit=cutover.emit_checkpoints, sync=sync_here)))
        if separate_sync:
            assert cutover.sync_group_offsets_interval_s is not None
            tasks.append(PeriodicTask("group offset sync", cutover.sync_group_offsets_interval_s,
                                      lambda: self._round(emit=False, sync=True)))
        if cutover.refresh_groups and cutover.refresh_groups_interval_s is not None:
            tasks.append(PeriodicTask("group refresh", cutover.refresh_groups_interval_s, self._refresh_groups,
                                      first_after_s=cutover.refresh_groups_interval_s))
        return tasks

    def _poll_lease(self) -> None:
        had = self.lease.held
        if self.lease.poll() and not had:
            # Just taken (at start, or from a holder that stopped): write at once rather than an interval later,
            # every checkpoint (another holder may have written some since this process last did).
            self.checkpointer.write_all_again()
            for task in self.scheduler.tasks:
                if task.name in ("checkpoints", "group offset sync"):
                    self.scheduler.run_soon(task.name)

    def _refresh_groups(self) -> None:
        if self.lease.held:
            self._groups = self.checkpointer.groups()

    def _round_groups(self) -> list[str] | None:
        """The groups of this round: None lists them now; a listed set is kept when groups refresh on a timer."""
        cutover = self.plan.cutover
        if cutover.refresh_groups and cutover.refresh_groups_interval_s is None:
            return None
        if self._groups is None:
            self._groups = self.checkpointer.groups()
        return self._groups

    def _round(self, *, emit: bool, sync: bool) -> list[GroupSyncResult]:
        if not self.lease.poll():
            return []
        results = self.checkpointer.run_once(sync, emit_checkpoints=emit, groups=self._round_groups(),
                                             keep_going=self.lease.poll)
        self.last_results = results
        self._outcomes = log_round(results, self._outcomes)
        return results

    # ------------------------------------------------------------------ running
    def run_once(self, timeout_s: float | None = None) -> list[GroupSyncResult]:
        """One round of every enabled task, once this process holds the lease (LeaseRefused after `timeout_s`,
        default engine.session_timeout_s plus 5 s: long enough for a dead holder to be dropped)."""
        self.lease.acquire(self.plan.engine.session_timeout_s + 5 if timeout_s is None else timeout_s)
        cutover = self.plan.cutover
        return self._round(emit=cutover.emit_checkpoints, sync=cutover.sync_group_offsets)

    def start(self) -> None:
        """Run the tasks in a background thread (beside the copy)."""
        self.scheduler.start()

    def run(self, max_seconds: float | None = None) -> None:
        """Run the tasks in this thread until `stop()` (or for `max_seconds`)."""
        self.scheduler.run(max_seconds)

    def stop(self) -> None:
        """No round starts after this (the running one finishes; callable from a signal handler)."""
        self.scheduler.stop(timeout_s=0)

    def close(self, timeout_s: float = 60.0) -> None:
        """Stop, wait for the running round, leave the lease group and flush what was written."""
        if not self.scheduler.stop(timeout_s):
            log.error("the checkpoint loop of plan '%s' did not finish its round within %.0f s; leaving it",
                      self.plan.name, timeout_s)
            return  # its clients are still in use: closing them under it could crash the process
        self.lease.close()
        self.checkpointer.close()
