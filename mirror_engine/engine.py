"""The replication engine: copies the plan's topics from the source to the target, partition for partition.

The hot loop (`_copy`) does the least per record: consume in batches, one `produce()` per record
to the same partition number with key, value, headers and timestamp, and O(1) bookkeeping in the
delivery callback. Everything else (offset-syncs beyond discontinuities, progress, heartbeats,
discovery, logging) runs on timers between batches.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from mirror_engine.clusters import admin_client, describe_cluster
from mirror_engine.control import ControlChannel
from mirror_engine.internal_topics import InternalTopics, engine_group_id, ensure_internal_topics
from mirror_engine.mm2_formats import Heartbeat, OffsetSync
from mirror_engine.partition_state import FAR, PartitionState
from mirror_engine.plan import MigrationPlan
from mirror_engine.prepare import apply_actions, plan_preparation, render_actions
from mirror_engine.progress import PartitionProgress, load_progress, managed_target_topics
from mirror_engine.record_sizes import Headers, batch_size_alone, header_size_bound
from mirror_engine.status_http import StatusServer
from mirror_engine.topics import describe_topic_configs, list_offsets

log = logging.getLogger(__name__)

TopicPartitionKey = tuple[str, int]


class EngineError(RuntimeError):
    """The engine cannot go on; the message says what to do."""


@dataclass
class RunSummary:
    records: int = 0
    bytes: int = 0
    seconds: float = 0.0
    failed_partitions: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failed_partitions


def default_worker_id() -> str:
    """host-pid: unique per process, but not stable across restarts (name exactly-once workers yourself)."""
    return f"{socket.gethostname()}-{os.getpid()}"


def _topic_ids(admin: AdminClient, topics: list[str]) -> dict[str, str]:
    from confluent_kafka import TopicCollection

    if not topics:
        return {}
    futures = admin.describe_topics(TopicCollection(topics), request_timeout=15)
    return {name: str(future.result().topic_id) for name, future in futures.items()}


class Replicator:
    """One flow of one plan, in one process.

    Alone (`mirror-engine run`) it copies every partition of the plan's topics. As one of several
    workers (`worker_id` given, `mirror-engine worker`) it copies the partitions Kafka's group
    protocol gives it: the workers of a flow form the consumer group `mirror-engine.<plan>` on the
    source with cooperative-sticky assignment; a worker stores the progress of partitions it gives
    up, and takes partitions up from the stored progress.
    """

    def __init__(
        self,
        plan: MigrationPlan,
        source_config: dict[str, str],
        target_config: dict[str, str],
        *,
        prepare_target: bool = True,
        on_progress: Callable[[Replicator], None] | None = None,
        worker_id: str | None = None,
    ) -> None:
        self.plan = plan
        self.group_mode = worker_id is not None
        self.worker_id = worker_id or default_worker_id()
        self.exactly_once = plan.engine.exactly_once
        self.source_config = source_config
        self.target_config = target_config
        self.prepare_target = prepare_target
        self.on_progress = on_progress
        self.topics = InternalTopics.for_plan(plan)
        self.policy = plan.policy()
        self.states: dict[TopicPartitionKey, PartitionState] = {}
        self.fatal: str = ""
        self._target_topic: dict[str, str] = {}
        self._record_limits: dict[str, int] = {}  # target topic -> its max.message.bytes
        self._batch_cap = 1 << 30  # the producer's batch.size: at most every written topic's limit
        self._outages: dict[str, tuple[float, str]] = {}  # cluster alias -> (since, as a time of day)
        self._transactions_started = False  # exactly-once: init_transactions done, a transaction open
        self._stop = threading.Event()
        self._consumer: Consumer | None = None
        self._producer: Producer | None = None
        self._stored: dict[TopicPartitionKey, PartitionProgress] = {}
        self._initial_partitions: set[TopicPartitionKey] = set()  # those there when this engine started
        self._subscription: list[str] = []
        self.flow_state = "running"
        self.last_error = ""
        self.status_snapshot: dict = {}
        self._rate_base: tuple[float, dict[TopicPartitionKey, int]] = (time.monotonic(), {})
        self._bytes_fetched: dict[TopicPartitionKey, int] = {}
        self._status_server: StatusServer | None = None
        self._records_released = 0  # records copied in partitions since given up (workers)

    # ------------------------------------------------------------------ setup
    @property
    def group_id(self) -> str:
        """The source consumer group the workers of this flow share."""
        return engine_group_id(self.plan)

    def _connect(self) -> None:
        describe_cluster(self.plan.source.alias, self.source_config)
        describe_cluster(self.plan.target.alias, self.target_config)
        self._source_admin = admin_client(self.source_config)
        self._target_admin = admin_client(self.target_config)
        ensure_internal_topics(self._target_admin, self.topics)
        engine = self.plan.engine
        # The internal topics' limits bound the batches of offset-syncs, progress and status records.
        internal = [self.topics.offset_syncs, self.topics.progress, self.topics.status, self.topics.heartbeats]
        self._batch_cap = min([engine.producer_batch_bytes, *self._topic_limits(internal).values()])
        self._producer = self._new_producer()
        consumer_config: dict[str, object] = {
            **self.source_config,
            "group.id": self.group_id,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
            # A position that fell behind the log start is an error to report, never a silent reset.
            "auto.offset.reset": "error",
            "fetch.max.bytes": 64 * 1024 * 1024,
            "max.partition.fetch.bytes": 8 * 1024 * 1024,
            "queued.max.messages.kbytes": 256 * 1024,
            # Bytes fetched per partition, for the status, at no cost to the copy loop.
            "statistics.interval.ms": max(1000, int(engine.status_interval_s * 1000)),
            "stats_cb": self._on_consumer_stats,
            "error_cb": self._on_source_error,
        }
        if self.group_mode:
            consumer_config.update({
                "partition.assignment.strategy": "cooperative-sticky",
                "session.timeout.ms": int(engine.session_timeout_s * 1000),
                "heartbeat.interval.ms": int(engine.session_timeout_s * 1000 / 4),
                # Partitions added on the source reach the group's assignment this soon.
                "topic.metadata.refresh.interval.ms": int(engine.refresh_interval_s * 1000),
            })
        self._consumer = Consumer(consumer_config)

    def _new_producer(self) -> Producer:
        """The target producer, its batches capped at `self._batch_cap` bytes.

        A broker refuses a whole batch larger than its topic's `max.message.bytes`, and an idempotent
        producer with the gapless guarantee (or a transactional one) treats a refused record as fatal:
        every partition would stop. librdkafka's `batch.size` (which bounds the whole produce request, so
        each batch in it too) is one setting per producer, while limits are per topic; so the cap is the
        smallest limit among the topics this producer writes, lowered (the producer rebuilt) when a topic
        with a lower limit joins the flow, and each record is checked against its own topic's limit
        before it is produced (`_copy`). One producer per class of limit would keep large batches for the
        other topics, but records, their offset-syncs and the progress must go through one producer (and
        one transaction in exactly-once mode) for the progress to prove what was copied.
        """
        engine = self.plan.engine
        producer_config: dict[str, object] = {
            **self.target_config,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": engine.linger_ms,
            "batch.size": max(1, self._batch_cap),
            "compression.type": engine.compression,
            # Records above a topic's own limit never reach produce(): this only bounds requests.
            "message.max.bytes": 1_000_000_000,
            "queue.buffering.max.messages": 500_000,
            "error_cb": self._on_client_error,
        }
        if self.exactly_once:
            # The id outlives the process: a worker restarted with the same id fences its predecessor's
            # open transaction at once instead of waiting for its timeout.
            producer_config["transactional.id"] = f"mirror-engine.{self.plan.name}.{self.worker_id}"
            producer_config["transaction.timeout.ms"] = int(engine.transaction_timeout_s * 1000)
        else:
            # Any failed record is fatal rather than skipped: an acknowledged record then proves every
            # earlier record of its partition was written, so most records need no delivery callback.
            # Records a target topic cannot take are therefore never produced (see `_copy`).
            producer_config["enable.gapless.guarantee"] = True
        return Producer(producer_config)

    def _topic_limits(self, topics: list[str]) -> dict[str, int]:
        """Each target topic's `max.message.bytes` (its override, or the target broker's default)."""
        limits = {}
        for topic, entries in describe_topic_configs(self._target_admin, topics).items():
            configs = {entry.name: entry.value for entry in entries}
            limits[topic] = int(configs.get("max.message.bytes") or 1048588)
        return limits

    def _lower_batch_cap(self, limit: int, topic: str) -> None:
        """A target topic takes smaller batches than the producer makes: rebuild it with batches that fit."""
        log.info("target topic %s takes batches of at most %d bytes (max.message.bytes): the producer's batches "
                 "are capped there (were %d)", topic, limit, self._batch_cap)
        self._batch_cap = limit
        producer = self._producer
        if producer is None:
            return
        if self.exactly_once:
            if self._transactions_started:
                self._commit_transaction(begin_next=False)
            if self.fatal:
                return
        else:
            if producer.flush(60):
                self.fatal = (f"records not acknowledged by the target within 60 s while lowering the batch size "
                              f"for {topic}; nothing after the last acknowledged record counts as copied")
                return
            self._write_progress()
            producer.flush(30)
        self._producer = self._new_producer()
        if self.exactly_once and self._transactions_started:
            self._producer.init_transactions(60)
            self._producer.begin_transaction()
        if self.states:
            self._producer_knows(list(self.states))

    def _prepare(self, initial: bool) -> None:
        """Create or update the target's topics (idempotent); at start, and at every refresh for discovery."""
        managed = frozenset(state.target_topic for state in self.states.values()) | frozenset(
            self.policy.format_remote_topic(self.plan.source.alias, topic) for topic, _ in self._stored
        )
        for attempt in range(3):
            prepared = plan_preparation(self.plan, self.source_config, self.target_config, managed, best_effort=True)
            if attempt == 0:
                for warning in prepared.warnings:
                    log.warning("%s", warning)
            if prepared.problems and self.group_mode and attempt < 2:
                # Another worker of the flow may have just created a topic and copied into it: its progress
                # (committed within a progress interval) makes the topic the flow's. Look again after that.
                time.sleep(self.plan.engine.progress_interval_s + 1)
                managed |= managed_target_topics(self.plan, self.target_config)
                continue
            if prepared.problems:
                raise EngineError("the target is not ready for this plan:\n  " + "\n  ".join(prepared.problems))
            self._source_topics = prepared.source_topics
            if not prepared.actions:
                return
            log.info("preparing the target:\n%s", render_actions(prepared.actions))
            result = apply_actions(self.target_config, prepared.actions)
            if not result.failed:
                return
            failures = "; ".join(f"{a.kind} {a.resource}: {e}" for a, e in result.failed)
            # Another worker of the flow may have made the same change a moment earlier: plan again. A topic
            # missing when planned and there now was created by one of them: it is the flow's, even if that
            # worker has already copied records into it.
            managed |= frozenset(action.resource for action, error in result.failed
                                 if action.kind == "create_topic" and "already exists" in error)
            log.info("preparing the target: %s; planning again", failures)
            time.sleep(1)
        message = f"preparing the target failed: {failures}"
        if initial:
            raise EngineError(message)
        log.error("%s", message)

    def _describe_targets(self, topics: list[str]) -> None:
        for topic in topics:
            self._target_topic[topic] = self.policy.format_remote_topic(self.plan.source.alias, topic)
        targets = [self._target_topic[t] for t in topics]
        for target, entries in describe_topic_configs(self._target_admin, targets).items():
            configs = {entry.name: entry.value for entry in entries}
            limit = int(configs.get("max.message.bytes") or 1048588)
            self._record_limits[target] = limit
            if limit < self._batch_cap:
                self._lower_batch_cap(limit, target)
            if configs.get("message.timestamp.type") == "LogAppendTime":
                log.warning("target topic %s uses LogAppendTime: the source records' timestamps are replaced "
                            "by the target broker's time", target)

    def _start_offset(self, topic: str, partitions: list[int], discovered: bool) -> dict[int, int]:
        """Where a partition with no stored progress starts: the plan's start, or earliest for a new topic."""
        start = "earliest" if discovered else self.plan.engine.start_from
        tps = [TopicPartition(topic, p) for p in partitions]
        if start == "earliest":
            offsets = list_offsets(self._source_admin, tps, OffsetSpec.earliest())
        elif start == "latest":
            offsets = list_offsets(self._source_admin, tps, OffsetSpec.latest())
        else:
            millis = int(datetime.fromisoformat(start.replace("Z", "+00:00")).timestamp() * 1000)
            offsets = list_offsets(self._source_admin, tps, OffsetSpec.for_timestamp(millis))
            latest = list_offsets(self._source_admin, tps, OffsetSpec.latest())
            offsets = {k: (v if v >= 0 else latest[k]) for k, v in offsets.items()}
        return {p: offsets[(topic, p)] for p in partitions}

    def _plan_partitions(self) -> set[TopicPartitionKey]:
        """Every source partition of the plan's topics, as the source shows them now."""
        metadata = self._source_admin.list_topics(timeout=15).topics
        return {(topic, p) for topic in self._source_topics if topic in metadata for p in metadata[topic].partitions}

    def _assign_new_partitions(self, stored: dict[TopicPartitionKey, PartitionProgress],
                               offered: list[TopicPartitionKey] | None = None) -> None:
        """Start copying partitions: alone, every partition of the plan not copied yet; as a worker, the
        partitions the group just `offered`, which must all be assigned (those that cannot be copied paused)."""
        if offered is None:
            wanted = {key for key in self._plan_partitions() if key[0] not in self._control.switched_topics}
            new = sorted(wanted - set(self.states))
            held = self._hold_for_backfill(new, stored)
            new = [key for key in new if key not in held]
        else:  # the subscription leaves out switched topics and those waiting for their backfill
            new = sorted(set(offered) - set(self.states))
        if not new:
            return
        topics = sorted({topic for topic, _ in new})
        self._describe_targets(topics)
        ids = _topic_ids(self._source_admin, topics)
        earliest = list_offsets(self._source_admin, [TopicPartition(t, p) for t, p in new], OffsetSpec.earliest())
        latest = list_offsets(self._source_admin, [TopicPartition(t, p) for t, p in new], OffsetSpec.latest())
        target_ends = list_offsets(
            self._target_admin, [TopicPartition(self._target_topic[t], p) for t, p in new], OffsetSpec.latest()
        )
        self._producer_knows(new)
        # Partitions without stored progress start at the plan's start, or at their beginning when they
        # appeared after this engine started (a new topic or added partitions: all their records are new).
        fresh: dict[tuple[str, bool], list[int]] = {}
        for key in new:
            if key not in stored:
                fresh.setdefault((key[0], key not in self._initial_partitions), []).append(key[1])
        starts = {
            (topic, p): offset
            for (topic, discovered), partitions in fresh.items()
            for p, offset in self._start_offset(topic, partitions, discovered).items()
        }
        assignment, stopped = [], []
        for topic, partition in new:
            key = (topic, partition)
            progress = stored.get(key)
            target_end = target_ends[(self._target_topic[topic], partition)]
            position = progress.position if progress else starts[key]
            state = PartitionState(topic, partition, self._target_topic[topic], position, ids.get(topic, ""),
                                   self._record_limits.get(self._target_topic[topic], FAR))
            state.on_new_delta, state.on_failure = self._send_sync, self._fail_partition
            state.target_position = progress.target_position if progress and progress.target_position >= 0 \
                else target_end
            self.states[key] = state
            gap = self._gap(state, progress, earliest[key], latest[key])
            if gap:
                if not self.plan.engine.allow_gaps:
                    state.failed = self.last_error = f"{topic}[{partition}]: {gap}"
                    log.error("%s", state.failed)
                    if offered is not None:  # the group gave it to this worker: hold it, paused
                        stopped.append(TopicPartition(topic, partition, position))
                    continue
                log.warning("%s[%d]: %s; skipping it because engine.allow_gaps is set", topic, partition, gap)
                state.start_position = state.produced_next = state.acked_next = earliest[key]
                position = earliest[key]
            assignment.append(TopicPartition(topic, partition, position))
        assert self._consumer is not None
        if assignment or stopped:
            self._consumer.incremental_assign(assignment + stopped)
            if stopped:
                self._consumer.pause(stopped)
            if self.flow_state == "paused" and assignment:
                self._consumer.pause(assignment)
            log.info("copying %d partition(s) of %d topic(s)", len(assignment), len(topics))
        self._write_progress(force=True)

    def _hold_for_backfill(self, new: list[TopicPartitionKey],
                           stored: dict[TopicPartitionKey, PartitionProgress]) -> set[TopicPartitionKey]:
        """New partitions of the plan's backfill topics wait while Spark copies their history.

        The first time the flow meets such a topic it records, in the control topic, each partition's
        source end B and target end; the backfill copies [earliest, B), stores the partitions' progress
        at B and marks the topic done, after which they are copied from B like any other partition.
        """
        fresh: dict[str, list[int]] = {}
        for topic, partition in new:
            snapshot = self._control.backfills.get(topic)
            if (topic, partition) not in stored and self.plan.backfills_topic(topic) and \
                    (snapshot is None or snapshot.state != "done"):
                fresh.setdefault(topic, []).append(partition)
        held: set[TopicPartitionKey] = set()
        for topic, partitions in fresh.items():
            snapshot = self._control.backfills.get(topic)
            missing = [p for p in partitions if snapshot is None or p not in snapshot.partitions]
            if missing:
                self._describe_targets([topic])
                target = self._target_topic[topic]
                ends = list_offsets(self._source_admin, [TopicPartition(topic, p) for p in missing],
                                    OffsetSpec.latest())
                target_ends = list_offsets(self._target_admin, [TopicPartition(target, p) for p in missing],
                                           OffsetSpec.latest())
                recorded = dict(snapshot.partitions) if snapshot else {}
                recorded.update({p: (ends[(topic, p)], target_ends[(target, p)]) for p in missing})
                self._control.hold_for_backfill(topic, recorded)
                log.info("holding %d partition(s) of %s for the Spark backfill of its history up to %s", len(missing),
                         topic, {p: recorded[p][0] for p in sorted(missing)})
            held.update((topic, p) for p in partitions)
        return held

    def _resume_backfilled(self, topics: set[str]) -> None:
        """The backfill of these topics stored their progress: copy them on from there."""
        if not topics:
            return
        progress = load_progress(self.target_config, self.topics.progress)
        self._stored.update({key: value for key, value in progress.items() if key[0] in topics})
        log.info("backfill done for %s: copying on from the backfill's end", ", ".join(sorted(topics)))
        if self.flow_state == "stopped":
            return
        if self.group_mode:
            self._subscribe()
        else:
            self._assign_new_partitions(self._stored)

    def _producer_knows(self, partitions: list[TopicPartitionKey], timeout_s: float = 30.0) -> None:
        """Refresh the producer's metadata until it sees the target partitions (produce() to a partition its
        cache does not hold fails at once, and the cache of a topic that just grew may be minutes old)."""
        deadline = time.monotonic() + timeout_s
        for topic in sorted({topic for topic, _ in partitions}):
            target = self._target_topic[topic]
            needed = 1 + max(p for t, p in partitions if t == topic)
            while True:
                metadata = self._producer.list_topics(target, timeout=timeout_s).topics.get(target)  # type: ignore[union-attr]
                if metadata is not None and len(metadata.partitions) >= needed:
                    break
                if time.monotonic() > deadline:
                    raise EngineError(f"the target does not show {needed} partitions of {target} after "
                                      f"{timeout_s:.0f} s")
                time.sleep(0.2)

    @staticmethod
    def _gap(state: PartitionState, progress: PartitionProgress | None, earliest: int, latest: int) -> str:
        if progress is None:
            return ""
        if progress.topic_id and state.topic_id and progress.topic_id != state.topic_id:
            return (f"the source topic was deleted and recreated (topic id {progress.topic_id} -> {state.topic_id}): "
                    "its old records were not all copied and the new ones would mix with them")
        if latest < progress.position:
            return (f"the source partition ends at {latest}, before the copied position {progress.position}: "
                    "it was truncated or recreated")
        if earliest > progress.position:
            return (f"records {progress.position}..{earliest - 1} were deleted on the source (retention) before "
                    "they were copied")
        return ""

    # ------------------------------------------------------------------ taking and giving up partitions
    def _check_no_other_kind_runs(self) -> None:
        """A single engine copies every partition: beside workers of the same flow (or workers beside it)
        both would copy the same partitions into the same target partitions."""
        from mirror_engine.status import is_live, read_worker_statuses

        if self.group_mode:
            singles = [s["worker"] for s in read_worker_statuses(self.plan, self.target_config, window_s=60)
                       if s["mode"] == "single" and is_live(s) and s["worker"] != self.worker_id]
            if singles:
                raise EngineError(f"a single engine of this flow runs ({', '.join(singles)}: `mirror-engine run`); "
                                  "workers beside it would copy its partitions twice: stop it first")
            return
        group = self.group_id
        try:
            description = self._source_admin.describe_consumer_groups([group], request_timeout=10)[group].result()
        except KafkaException as error:  # no DESCRIBE on the group: nothing to learn here
            log.debug("could not describe group %s: %s", group, error)
            return
        if description.members:
            raise EngineError(f"{len(description.members)} worker(s) of this flow run (group {group} on the source): "
                              "a single engine beside them would copy their partitions twice; start another "
                              "`mirror-engine worker` instead, or stop them first")

    def _acquire(self) -> None:
        """Start copying: alone, every partition of the plan; as a worker, join the flow's group."""
        if self.group_mode:
            self._subscribe()
        else:
            self._assign_new_partitions(self._stored)

    def _subscribe(self) -> None:
        """Subscribe to the topics to copy now (again when they change: the group then rebalances)."""
        pending_backfill = {topic for topic, _ in self._hold_for_backfill(
            sorted(key for key in self._plan_partitions() if key not in self._stored), self._stored)}
        topics = sorted(set(self._source_topics) - self._control.switched_topics - pending_backfill)
        if topics == self._subscription:
            return
        self._subscription = topics
        assert self._consumer is not None
        if topics:
            self._consumer.subscribe(topics, on_assign=self._on_assign, on_revoke=self._on_revoke,
                                     on_lost=self._on_lost)
        else:
            self._consumer.unsubscribe()
        log.info("worker %s subscribed to %d topic(s) of the flow", self.worker_id, len(topics))

    def _on_assign(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        offered = [(tp.topic, tp.partition) for tp in partitions]
        if not offered:
            return
        # The previous owner stored its progress before giving the partitions up: read it now.
        latest = load_progress(self.target_config, self.topics.progress)
        for key in offered:
            if key in latest:
                self._stored[key] = latest[key]
            else:
                self._stored.pop(key, None)
        self._assign_new_partitions(self._stored, offered)
        log.info("worker %s took %d partition(s) from the group: %s", self.worker_id, len(offered),
                 _describe_keys(offered))

    def _on_revoke(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        keys = [(tp.topic, tp.partition) for tp in partitions]
        self._release([key for key in keys if key in self.states])
        self._consumer.incremental_unassign(partitions)  # type: ignore[union-attr]
        if keys:
            log.info("worker %s gave up %d partition(s) to the group: %s", self.worker_id, len(keys),
                     _describe_keys(keys))

    def _on_lost(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """The group gave these partitions to others while this worker was silent: write nothing more for them."""
        keys = [(tp.topic, tp.partition) for tp in partitions]
        if self.exactly_once:
            # The open transaction holds records of the lost partitions: it must not commit.
            self.fatal = (f"worker {self.worker_id} lost {len(keys)} partition(s) to the group (it was silent longer "
                          f"than engine.session_timeout_s); its open transaction is abandoned: restart it")
            return
        for key in keys:
            lost = self.states.pop(key, None)
            self._records_released += lost.records_copied if lost else 0
        self._consumer.incremental_unassign(partitions)  # type: ignore[union-attr]
        log.warning("worker %s lost %d partition(s) to the group: %s", self.worker_id, len(keys), _describe_keys(keys))

    def _release(self, keys: list[TopicPartitionKey]) -> None:
        """Store the final progress of these partitions and stop copying them (the caller unassigns them)."""
        if not keys:
            return
        if self.exactly_once:
            if not self.fatal:  # after a fatal error the open transaction must not commit
                self._commit_transaction()
        else:
            remaining = self._producer.flush(60)  # type: ignore[union-attr]
            if remaining:
                log.error("%d records not acknowledged by the target while giving partitions up; the next owner "
                          "copies them again", remaining)
            self._write_progress(keys)
            self._producer.flush(30)  # type: ignore[union-attr]
        for key in keys:
            self._records_released += self.states.pop(key).records_copied

    def _release_all(self) -> None:
        if self.group_mode:
            self._subscription = []
            self._consumer.unsubscribe()  # type: ignore[union-attr]  # the revocation stores the progress
        else:
            keys = list(self.states)
            self._release(keys)
            self._consumer.incremental_unassign([TopicPartition(*key) for key in keys])  # type: ignore[union-attr]

    def _apply_flow_state(self, state: str) -> None:
        previous, self.flow_state = self.flow_state, state
        if state == "stopped":
            self._release_all()
            log.info("flow stopped: progress stored, partitions released")
        elif previous == "stopped":
            self._acquire()
            log.info("flow started%s", " (paused)" if state == "paused" else "")
        else:
            self._set_paused(state == "paused")

    def _commit_transaction(self, begin_next: bool = True) -> None:
        """Exactly-once: commit the copied records with their offset-syncs and the progress they reach."""
        producer = self._producer
        assert producer is not None
        try:
            if producer.flush(60):  # every record acknowledged: their callbacks queue the offset-syncs
                raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "records not acknowledged in 60 s"))
            producer.flush(30)
            self._write_progress()
            producer.commit_transaction(60)
            if begin_next:
                producer.begin_transaction()
        except KafkaException as error:
            self.fatal = f"committing the transaction on the target failed (nothing of it counts as copied): {error}"

    # ------------------------------------------------------------------ the hot path
    def _copy(self, messages: list[Message]) -> None:
        produce = self._producer.produce  # type: ignore[union-attr]
        states = self.states
        count = len(messages)
        state: PartitionState | None = None
        topic = target = ""
        partition = run_length = 0
        run_start = False
        for i in range(count):
            message = messages[i]
            if message.error() is not None:
                self._on_consume_error(message)
                continue
            if state is None:  # the first record of a run of one partition
                topic, partition = message.topic(), message.partition()
                state = states[(topic, partition)]
                target = state.target_topic
                run_start, run_length = True, 0
            # Does the run go on with the next message? If not, this record closes it.
            if i + 1 < count:
                following = messages[i + 1]
                run_ends = following.error() is not None or following.partition() != partition \
                    or following.topic() != topic
            else:
                run_ends = True
            if not state.failed:
                offset = message.offset()
                value, key, headers = message.value(), message.key(), message.headers()
                # A record the target topic cannot take must never be produced: the broker would refuse its
                # whole batch and the producer would turn that into a fatal error for every partition.
                # A cheap bound first; the exact size only for records near the limit.
                raw = (len(value) if value else 0) + (len(key) if key else 0)
                if headers:
                    raw += header_size_bound(headers)
                if raw <= state.raw_budget or not self._refuse_if_too_large(state, offset, key, value, headers):
                    boundary = run_start or offset != state.produced_next
                    callback = state.callback(offset, boundary, state.records_produced + run_length + 1) \
                        if boundary or run_ends else None
                    try:
                        # All positional (topic, value, key, partition, callback, on_delivery, timestamp, headers):
                        # keyword arguments cost a string lookup each, per record.
                        produce(target, value, key, partition, callback, None, message.timestamp()[1], headers)
                        state.produced_next = offset + 1
                        run_length += 1
                    except BufferError:
                        self._produce_when_room(target, message, partition, callback)
                        state.produced_next = offset + 1
                        run_length += 1
                    except KafkaException as error:  # refused by the client itself: nothing was sent
                        if callback is not None:
                            state.callbacks_pending -= 1
                        self._stop_partition_at(state, offset, f"{state.topic}[{partition}]: the producer refused "
                                                               f"the record at offset {offset}: {error.args[0].str()}")
                run_start = False
            if run_ends:
                state.records_produced += run_length
                state = None
        self._producer.poll(0)  # type: ignore[union-attr]

    def _refuse_if_too_large(self, state: PartitionState, offset: int, key: bytes | None, value: bytes | None,
                             headers: Headers) -> bool:
        """Stop the partition at this record if its target topic cannot take it (size as the broker counts it)."""
        size = batch_size_alone(key, value, headers)
        if size <= state.max_batch_bytes:
            return False
        header_bytes = sum(len(name.encode()) + len(v or b"") for name, v in headers or ())
        self._stop_partition_at(state, offset, (
            f"{state.topic}[{state.partition}]: the record at offset {offset} is {size} bytes as the broker counts "
            f"it (key {len(key or b'')}, value {len(value or b'')}, headers {header_bytes} bytes, with the record "
            f"and batch framing), more than the {state.max_batch_bytes} bytes the target topic {state.target_topic} "
            "takes (its max.message.bytes): raise that limit on the target topic and restart the engine"))
        return True

    def _stop_partition_at(self, state: PartitionState, offset: int, reason: str) -> None:
        """Stop copying a partition before the record at `offset`, which is not produced.

        The records produced before it in this run carry no delivery callback (only a run's first and last
        do): wait until they are acknowledged, so that the progress stops right before the refused record
        and a restart re-sends none of them. With the gapless guarantee (or a transaction) the producer
        delivers them all or fails fatally, and they follow the last record with a callback one by one on
        both clusters, so their target positions follow too.
        """
        producer = self._producer
        assert producer is not None
        producer.flush(60)
        if not self.fatal and not state.failed and state.callbacks_pending == 0 and state.acked_next >= 0:
            tail = state.produced_next - state.acked_next
            if tail > 0 and state.delta is not None:
                state.records_copied += tail
                state.acked_next = state.produced_next
                state.target_position += tail
                state.acked_source, state.acked_target = state.produced_next - 1, state.target_position - 1
        self._fail_partition(state, reason, offset)

    def _produce_when_room(self, target: str, message: Message, partition: int, callback: object) -> None:
        """The local queue is full: serve deliveries until the record fits."""
        while True:
            self._producer.poll(0.05)  # type: ignore[union-attr]
            try:
                self._producer.produce(target, message.value(), message.key(), partition, callback,  # type: ignore[union-attr]
                                       None, message.timestamp()[1], message.headers())
                return
            except BufferError:
                continue

    def _on_client_error(self, error: KafkaError) -> None:
        if error.fatal():
            self.fatal = f"the target producer hit a fatal error (nothing after the last acknowledged record counts " \
                         f"as copied): {error.str()}"
        elif error.code() == KafkaError._ALL_BROKERS_DOWN:
            self._outage_began(self.plan.target.alias, self.target_config)
        else:
            log.debug("target client: %s", error.str())

    def _on_source_error(self, error: KafkaError) -> None:
        if error.fatal():
            self.fatal = f"source consumer: {error.str()}"
        elif error.code() == KafkaError._ALL_BROKERS_DOWN:
            self._outage_began(self.plan.source.alias, self.source_config)
        else:
            log.debug("source client: %s", error.str())

    def _outage_began(self, alias: str, config: dict[str, str]) -> None:
        """One line per outage, when every broker of a cluster is down (librdkafka's own lines repeat)."""
        if alias in self._outages:
            return
        self._outages[alias] = (time.monotonic(), datetime.now().astimezone().strftime("%H:%M:%S"))
        log.warning("cluster '%s' (%s) does not answer since %s: all its brokers are down; copying waits and goes "
                    "on by itself when it answers", alias, config.get("bootstrap.servers"), self._outages[alias][1])

    def _check_outages(self) -> None:
        """A cluster that was down answers again: say so once, with how long it was away."""
        for alias in list(self._outages):
            client = self._producer if alias == self.plan.target.alias else self._consumer
            try:
                client.list_topics(timeout=0.5)  # type: ignore[union-attr]
            except KafkaException:
                continue
            began, since = self._outages.pop(alias)
            log.warning("cluster '%s' answers again (it did not from %s, %.0f s)", alias, since,
                        time.monotonic() - began)

    # ------------------------------------------------------------------ side records
    def _send_sync(self, state: PartitionState, source: int, target: int) -> None:
        sync = OffsetSync(state.topic, state.partition, source, target)
        state.syncs_in_flight.append((source, target))
        state.last_synced_source = source
        self._producer.produce(self.topics.offset_syncs, sync.record_value(), sync.record_key(), 0,  # type: ignore[union-attr]
                               self._on_internal_delivery)

    def _on_internal_delivery(self, error: KafkaError | None, message: Message) -> None:
        if message.topic() == self.topics.offset_syncs:
            sync = OffsetSync.from_record(message.key(), message.value())
            state = self.states.get((sync.topic, sync.partition))
            if error is not None:
                self.fatal = f"writing offset-sync for {sync.topic}[{sync.partition}] failed: {error.str()}"
                return
            if state is not None and state.syncs_in_flight and state.syncs_in_flight[0][0] == sync.upstream_offset:
                state.syncs_in_flight.popleft()
        elif error is not None:
            self.fatal = f"writing to {message.topic()} on the target failed: {error.str()}"

    def _send_periodic_syncs(self) -> None:
        """Refresh syncs of partitions that moved: MM2's readers translate from the latest sync before an offset."""
        for state in self.states.values():
            if state.acked_source > state.last_synced_source and not state.failed:
                self._send_sync(state, state.acked_source, state.acked_target)

    def _write_progress(self, keys: list[TopicPartitionKey] | None = None, force: bool = False) -> None:
        states = self.states.values() if keys is None else [self.states[key] for key in keys]
        for state in states:
            position = state.copied_position()
            if position != state.stored_position or force:
                progress = PartitionProgress(
                    state.topic, state.partition, position, state.progress_target_position(), state.topic_id
                )
                self._producer.produce(  # type: ignore[union-attr]
                    self.topics.progress, progress.value(), progress.key(self.plan.source.alias), 0,
                    self._on_internal_delivery,
                )
                state.stored_position = position

    def _send_heartbeat(self) -> None:
        beat = Heartbeat(self.plan.source.alias, self.plan.target.alias, int(time.time() * 1000))
        self._producer.produce(self.topics.heartbeats, beat.record_value(), beat.record_key(), 0,  # type: ignore[union-attr]
                               self._on_internal_delivery, timestamp=beat.timestamp_ms)

    def _on_consume_error(self, message: Message) -> None:
        error = message.error()
        code = error.code()
        if code == KafkaError._PARTITION_EOF:
            state = self.states.get((message.topic(), message.partition()))
            if state is not None:
                state.end_seen = message.offset()
            return
        if code == KafkaError._AUTO_OFFSET_RESET and message.topic():
            state = self.states.get((message.topic(), message.partition()))
            if state is not None:
                position = state.copied_position()
                self._fail_partition(state, f"the next record to copy, at {position}, was deleted on "
                                            f"the source before it was copied: {error.str()}", position)
            return
        if error.fatal():
            self.fatal = f"source consumer: {error.str()}"
        else:
            log.warning("source consumer: %s", error.str())

    def _fail_partition(self, state: PartitionState, reason: str, at_offset: int) -> None:
        if state.failed:
            return
        state.failed = reason
        state.failed_at = at_offset
        self.last_error = f"{state.topic}[{state.partition}]: {reason}"
        log.error("stopped copying %s[%d]: %s", state.topic, state.partition, reason)
        if self._consumer is not None:
            self._consumer.pause([TopicPartition(state.topic, state.partition)])

    # ------------------------------------------------------------------ the loop
    def stop(self) -> None:
        self._stop.set()

    def run(self, max_seconds: float | None = None, until_caught_up: bool = False) -> RunSummary:
        """Copy until stopped (or for `max_seconds`, or until every partition reached the source's end)."""
        self._connect()
        self._control = ControlChannel(self.plan, self.target_config)
        self._control.load()
        self.flow_state = self._control.flow_state
        self._stored = load_progress(self.target_config, self.topics.progress)
        if self.prepare_target:
            self._prepare(initial=True)
        else:
            self._source_topics = sorted(t for t in self._source_admin.list_topics(timeout=15).topics
                                         if self.plan.replicates_topic(t))
        self._initial_partitions = self._plan_partitions()
        self._check_no_other_kind_runs()
        consumer, producer = self._consumer, self._producer
        assert consumer is not None and producer is not None
        if self.exactly_once:
            producer.init_transactions(60)  # fences a predecessor with this worker's id and aborts what it left
            producer.begin_transaction()
            self._transactions_started = True
        self._start_status_server()
        if self.flow_state != "stopped":
            self._acquire()
        if self.flow_state == "stopped":
            log.info("the flow is stopped: waiting for `mirror-engine flows start`")

        engine = self.plan.engine
        started = time.monotonic()
        timers = {"progress": started, "sync": started, "heartbeat": 0.0, "refresh": started, "log": started,
                  "control": started, "status": 0.0}
        # Every consumed batch makes thousands of short-lived message objects that the cyclic garbage
        # collector would scan over and over (15% of the copy's time when profiled): scan far less often,
        # and never the objects of the set-up.
        gc_thresholds = gc.get_threshold()
        gc.freeze()
        gc.set_threshold(100_000, 50, 100)
        try:
            while not self._stop.is_set() and not self.fatal:
                self._copy(consumer.consume(engine.batch_size, timeout=0.2))
                now = time.monotonic()
                if now - timers["heartbeat"] >= engine.heartbeat_interval_s:
                    self._send_heartbeat()
                    timers["heartbeat"] = now
                if now - timers["sync"] >= engine.offset_sync_interval_s:
                    self._send_periodic_syncs()
                    timers["sync"] = now
                if now - timers["progress"] >= engine.progress_interval_s:
                    if self.exactly_once:
                        self._commit_transaction()
                    else:
                        self._write_progress()
                    timers["progress"] = now
                    if self.on_progress:
                        self.on_progress(self)
                if now - timers["status"] >= engine.status_interval_s:
                    self._publish_status()
                    timers["status"] = now
                if now - timers["log"] >= engine.log_interval_s:
                    self._log_progress(now - started)
                    timers["log"] = now
                if now - timers["control"] >= 1.0:
                    if self._outages:
                        self._check_outages()
                    changes = self._control.poll()
                    if changes.flow_state:
                        self._apply_flow_state(changes.flow_state)
                    self._stop_switched_topics(changes.switched)
                    self._resume_backfilled(changes.backfilled)
                    timers["control"] = now
                if now - timers["refresh"] >= engine.refresh_interval_s:
                    self._refresh()
                    timers["refresh"] = now
                if max_seconds is not None and now - started >= max_seconds:
                    break
                if until_caught_up and self.caught_up():
                    break
        finally:
            gc.set_threshold(*gc_thresholds)
            gc.unfreeze()
            self._shutdown()
            self._control.close()
        if self.fatal:
            raise EngineError(self.fatal)
        return self.summary(time.monotonic() - started)

    def _set_paused(self, paused: bool) -> None:
        """Stop or resume fetching every copied partition; progress and assignment are kept."""
        partitions = [TopicPartition(*key) for key, state in self.states.items() if not state.failed]
        if paused:
            self._consumer.pause(partitions)  # type: ignore[union-attr]
        else:
            self._consumer.resume(partitions)  # type: ignore[union-attr]
        log.info("flow %s: %d partition(s)", "paused" if paused else "resumed", len(partitions))

    def _stop_switched_topics(self, topics: set[str]) -> None:
        """Producers of these topics moved to the target: store the final progress and copy them no more."""
        if not topics:
            return
        if self.group_mode:
            self._subscribe()  # the group revokes the topics' partitions; the revocation stores their progress
        else:
            keys = [key for key in self.states if key[0] in topics]
            self._release(keys)
            self._consumer.incremental_unassign([TopicPartition(*key) for key in keys])  # type: ignore[union-attr]
        log.info("stopped copying %s: producers switched to the target", ", ".join(sorted(topics)))

    def _refresh(self) -> None:
        """Discovery: new matching topics and added partitions are prepared and copied; configs re-synced."""
        try:
            self._prepare(initial=False)
            if self.flow_state == "stopped":
                return
            if self.group_mode:
                self._subscribe()  # added partitions reach the group through the consumer's metadata
            else:
                self._assign_new_partitions(self._stored)
        except Exception as error:  # a failed refresh must not stop copying what is assigned
            self.last_error = f"refresh failed: {error}"
            log.error("refresh failed (copying goes on, retried next interval): %s", error, exc_info=True)

    def caught_up(self) -> bool:
        """Every partition copied and acknowledged up to the source's end as last seen."""
        return all(
            state.failed
            or (state.all_acknowledged() and state.end_seen >= 0 and state.copied_position() >= state.end_seen)
            for state in self.states.values()
        )

    def lag(self) -> dict[TopicPartitionKey, int]:
        """Records not yet copied per partition, from the consumer's cached watermarks."""
        lags = {}
        for key, state in self.states.items():
            _low, high = self._consumer.get_watermark_offsets(TopicPartition(*key), cached=True)  # type: ignore[union-attr]
            lags[key] = max(0, (high if high >= 0 else state.end_seen) - state.copied_position())
        return lags

    def _source_lag(self) -> dict[TopicPartitionKey, int]:
        """Records not yet copied per partition, against the source's ends asked now (the consumer's cached
        watermarks stand still while partitions are paused)."""
        try:
            ends = list_offsets(self._source_admin, [TopicPartition(*key) for key in self.states], OffsetSpec.latest(),
                                timeout_s=5)
        except KafkaException as error:
            log.debug("source ends unavailable, using the consumer's: %s", error)
            return self.lag()
        return {key: max(0, ends[key] - state.copied_position()) for key, state in self.states.items()}

    def _log_progress(self, elapsed: float) -> None:
        """One summary line, then one line per partition that is behind, failed or moved since the last log."""
        copied = sum(s.records_copied for s in self.states.values())
        lag = self.lag()
        behind = sum(1 for n in lag.values() if n > 0)
        log.info("copied %d records in %.0f s (%.0f rec/s); lag %d records%s", copied, elapsed,
                 copied / max(elapsed, 1e-9), sum(lag.values()),
                 f" in {behind} partition(s)" if behind else "")
        for key, state in sorted(self.states.items()):
            position = state.copied_position()
            if not (lag[key] or state.failed or position != state.logged_position):
                continue
            state.logged_position = position
            latency = f"{state.latency_ms} ms" if state.latency_ms >= 0 else "-"
            log.info("  %s[%d] -> %s: position %d, lag %d, latency %s, copied %d%s", state.topic, state.partition,
                     state.target_topic, position, lag[key], latency, state.records_copied,
                     f", STOPPED: {state.failed}" if state.failed else "")

    # ------------------------------------------------------------------ status
    def _start_status_server(self) -> None:
        port = self.plan.engine.status_port
        if port < 0:
            return
        try:
            self._status_server = StatusServer(lambda: self.status_snapshot, port, self.plan.engine.status_host)
        except OSError as error:
            raise EngineError(f"cannot serve the status on {self.plan.engine.status_host}:{port}: {error} (set "
                              "engine.status_port, or "
                              "--status-port, to a free port, or 0 for any)") from error
        log.info("status of worker %s on %s/status and %s/metrics", self.worker_id, self._status_server.url,
                 self._status_server.url)

    def _on_consumer_stats(self, stats_json: str) -> None:
        for topic, data in json.loads(stats_json).get("topics", {}).items():
            for partition, numbers in data.get("partitions", {}).items():
                if partition != "-1":
                    self._bytes_fetched[(topic, int(partition))] = int(numbers.get("rxbytes", 0))

    def build_status(self, exiting: bool = False) -> dict:
        """This worker's status snapshot (see `mirror_engine.status`)."""
        now_ms = int(time.time() * 1000)
        now = time.monotonic()
        base_time, base = self._rate_base
        elapsed = max(now - base_time, 1e-3)
        lag = self._source_lag() if self.states and not exiting else {}
        partitions = []
        for key, state in sorted(self.states.items()):
            behind = lag.get(key, 0)
            copied_before, bytes_before = base.get(key, (state.records_copied, self._bytes_fetched.get(key, 0)))
            rate = (state.records_copied - copied_before) / elapsed
            # At most this far behind: the next record to copy is no older than the last one copied.
            behind_ms = None if state.last_timestamp_ms < 0 else now_ms - state.last_timestamp_ms
            partitions.append({
                "topic": state.topic, "partition": state.partition, "target_topic": state.target_topic,
                "position": state.copied_position(), "lag": behind, "lag_ms": behind_ms if behind else 0,
                "records_copied": state.records_copied, "records_per_s": round(rate, 1),
                "bytes_fetched": self._bytes_fetched.get(key, 0),
                "bytes_per_s": round((self._bytes_fetched.get(key, 0) - bytes_before) / elapsed, 1),
                "catch_up_s": 0 if not behind else (round(behind / rate, 1) if rate > 0 else None),
                "replication_latency_ms": state.latency_ms if state.latency_ms >= 0 else None,
                "record_age_ms": state.record_age_ms if state.record_age_ms >= 0 else None,
                "failed": state.failed or None,
            })
        self._rate_base = (now, {key: (state.records_copied, self._bytes_fetched.get(key, 0))
                                 for key, state in self.states.items()})
        return {
            "plan": self.plan.name, "source": self.plan.source.alias, "target": self.plan.target.alias,
            "worker": self.worker_id, "mode": "worker" if self.group_mode else "single",
            "exactly_once": self.exactly_once, "state": "exited" if exiting else self.flow_state,
            "updated_ms": now_ms, "interval_s": self.plan.engine.status_interval_s,
            "http": self._status_server.url if self._status_server else None,
            "records_copied": sum(p["records_copied"] for p in partitions),
            "records_per_s": round(sum(p["records_per_s"] for p in partitions), 1),
            "lag": sum(p["lag"] for p in partitions),
            "last_error": self.fatal or self.last_error or None,
            "partitions": partitions,
        }

    def _publish_status(self, exiting: bool = False) -> None:
        """Refresh the HTTP snapshot and write it to the status topic (skipped, not waited for, when the
        producer's queue is full: the next one follows within an interval)."""
        self.status_snapshot = self.build_status(exiting)
        payload = json.dumps(self.status_snapshot).encode()
        try:
            self._producer.produce(self.topics.status, payload, self.worker_id.encode(), 0,  # type: ignore[union-attr]
                                   self._on_internal_delivery)
        except BufferError:
            pass
        except KafkaException as error:
            if not exiting:
                raise
            # The producer failed fatally: a short-lived one still tells the status readers why it stopped,
            # instead of leaving "running" as the flow's last word.
            log.debug("status through the engine's producer failed (%s): writing it with a new one", error)
            last_word = Producer({**self.target_config, "acks": "all"})
            last_word.produce(self.topics.status, payload, self.worker_id.encode(), 0)
            if last_word.flush(15):
                log.error("the final status could not be written to %s", self.topics.status)

    def _shutdown(self) -> None:
        """Wait for every in-flight record and sync, store the final progress, close the clients."""
        producer, consumer = self._producer, self._consumer
        if consumer is not None and self.group_mode:
            consumer.close()  # leaves the group: the revocation stores the progress of this worker's partitions
        if producer is not None:
            self._publish_status(exiting=True)
            if self.exactly_once:
                if not self.fatal:
                    self._commit_transaction(begin_next=False)
                else:
                    _abort_quietly(producer)
            else:
                remaining = producer.flush(60)
                if remaining:
                    log.error("%d records were not acknowledged by the target at shutdown; they are copied again "
                              "on the next start", remaining)
                self._write_progress()
                producer.flush(30)
        if consumer is not None and not self.group_mode:
            consumer.close()
        if self._status_server is not None:
            self._status_server.close()

    def summary(self, seconds: float) -> RunSummary:
        return RunSummary(
            records=self._records_released + sum(s.records_copied for s in self.states.values()),
            seconds=seconds,
            failed_partitions={f"{s.topic}[{s.partition}]": s.failed for s in self.states.values() if s.failed},
        )


def _abort_quietly(producer: Producer) -> None:
    """Abort the open transaction if the producer still can (the target aborts it at its timeout otherwise)."""
    try:
        producer.abort_transaction(10)
    except KafkaException as error:
        log.warning("aborting the open transaction failed (the target aborts it at its timeout): %s", error)


def _describe_keys(keys: list[TopicPartitionKey]) -> str:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(keys):
        by_topic.setdefault(topic, []).append(partition)
    return ", ".join(f"{topic}{partitions}" for topic, partitions in by_topic.items())
