"""The replication engine: copies the plan's topics from the source to the target, partition for partition.

`Replicator` composes the parts in `mirror_engine.replication`, along MirrorMaker 2's seams:
- the clients, built complete in one place (`clients`);
- the record copier, the hot loop (`copier`), and the side-record writer of offset-syncs, progress
  and heartbeats (`side_records`);
- a delivery mode (`delivery`: at-least-once or transactional) and a membership (`membership`: one
  process or a worker group), each chosen once;
- the partition assigner: start positions, the target's tail after a crash, gaps, backfill holds
  (`assigner`, `start_positions`, `reconcile`); the target's upkeep: topics, configs, ACLs (`target_upkeep`),
  refreshed beside the copy (`refresh`);
- the flow's control: run, pause, stop, switched topics (`flow_control`); the clients' errors (`faults`);
- the status reporter (`status_reporter`); the periodic work runs between batches on `mirror_engine.scheduler`.
"""

from __future__ import annotations

import functools
import gc
import logging
import os
import socket
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from mirror_engine.flow import ControlChannel, InternalTopics, engine_group_id
from mirror_engine.kafka import ClusterInfo, TopicListing, TopicPartitionKey, describe_plan_clusters
from mirror_engine.plan import MigrationPlan
from mirror_engine.replication.assigner import PartitionAssigner
from mirror_engine.replication.clients import ClientCallbacks, EngineClients
from mirror_engine.replication.copier import RecordCopier
from mirror_engine.replication.delivery import (
    AtLeastOnce,
    DeliveryMode,
    Transactional,
    transactional_id,
)
from mirror_engine.replication.faults import ClientErrors, EngineError, Faults, OutageWatch
from mirror_engine.replication.flow_control import FlowControl
from mirror_engine.replication.membership import Membership, SingleProcess, WorkerGroup
from mirror_engine.replication.memory import IdleTrim
from mirror_engine.replication.partition_state import PartitionState
from mirror_engine.replication.refresh import TopicRefresh
from mirror_engine.replication.side_records import SideRecordWriter
from mirror_engine.replication.status_reporter import StatusReporter
from mirror_engine.replication.target_upkeep import TargetUpkeep
from mirror_engine.scheduler import PeriodicTask, Scheduler
from mirror_engine.schemas import RecordRewrites

log = logging.getLogger(__name__)

__all__ = ["EngineError", "Replicator", "RunSummary", "default_worker_id"]


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
    """host-pid: unique per process, but not stable across restarts (name exactly-once workers yourself: a worker
    restarted with its --worker-id fences the transaction its killed predecessor left open)."""
    return f"{socket.gethostname()}-{os.getpid()}"


class Replicator:
    """One flow of one plan, in one process: alone (`mirror-engine run`), or as one of several workers
    (`worker_id` given, `mirror-engine worker`) sharing the flow's partitions through Kafka's group protocol."""

    # The parts, built by `run()`.
    clients: EngineClients
    control: ControlChannel
    side: SideRecordWriter
    copier: RecordCopier
    delivery: DeliveryMode
    assigner: PartitionAssigner
    membership: Membership
    upkeep: TargetUpkeep
    errors: ClientErrors
    flow: FlowControl
    refresh: TopicRefresh
    reporter: StatusReporter

    def __init__(self, plan: MigrationPlan, source_config: dict[str, str], target_config: dict[str, str], *,
                 worker_id: str | None = None, clusters: tuple[ClusterInfo, ClusterInfo] | None = None) -> None:
        """`clusters`: both clusters as the caller just described them (`describe_plan_clusters`): not asked again
        (by default `run()` asks them first)."""
        self.plan = plan
        self.source_config = source_config
        self.target_config = target_config
        self.clusters = clusters
        self.membership_kind: type[Membership] = WorkerGroup if worker_id is not None else SingleProcess
        self.worker_id = worker_id or default_worker_id()
        self.exactly_once = plan.engine.exactly_once
        self.topics = InternalTopics.for_plan(plan)
        self.states: dict[TopicPartitionKey, PartitionState] = {}
        self.faults = Faults()
        self.outages = OutageWatch()
        self._stop = threading.Event()
        # Set once start-up is done and the copy loop runs: what runs beside the copy starts only then.
        self.copying = threading.Event()
        self._collections = 0  # by `_collect_garbage`

    @property
    def group_id(self) -> str:
        """The copy's consumer's group id on the source (it is assigned its partitions: it never joins the group;
        the workers' group, over the flow's work units, is on the target)."""
        return engine_group_id(self.plan)

    @property
    def fatal(self) -> str:
        return self.faults.fatal

    @property
    def flow_state(self) -> str:
        """"running", "paused" or "stopped", as the control topic last said (`FlowControl`)."""
        return self.flow.state

    # ------------------------------------------------------------------ setup
    def _build(self) -> None:
        """Every part, its clients complete (both clusters answer, the flow's internal topics exist)."""
        plan, states, faults = self.plan, self.states, self.faults
        if self.clusters is None:
            self.clusters = describe_plan_clusters(plan, self.source_config, self.target_config)
        self.errors = ClientErrors(faults, self.outages,
                                   source=(plan.source.alias, self.source_config.get("bootstrap.servers")),
                                   target=(plan.target.alias, self.target_config.get("bootstrap.servers")))
        self.clients = clients = EngineClients.connect(
            plan, self.source_config, self.target_config, group_id=self.group_id,
            transactional_id=transactional_id(plan, self.membership_kind.transaction_member(self.worker_id))
            if self.exactly_once else None,
            callbacks=ClientCallbacks(self.errors.on_source_error, self.errors.on_target_error))
        self.side = SideRecordWriter(self.topics, plan.source.alias, plan.target.alias, states,
                                     lambda: clients.producer, faults)
        self.reporter = StatusReporter(plan, self.worker_id, self.membership_kind.mode, self.exactly_once,
                                       self.topics.status, states, faults, lambda: self.flow_state,
                                       self.side.on_delivery, clients)
        self.copier = RecordCopier(clients, states, faults, RecordRewrites.for_plan(plan))
        self.delivery = (Transactional if self.exactly_once else AtLeastOnce)(clients, self.side, faults)
        self.control = ControlChannel(plan, self.target_config)
        self.assigner = PartitionAssigner(plan, clients, states, self.control, self.side, self.copier, self.delivery,
                                          faults, self._lower_batch_cap)
        self.membership = self.membership_kind(plan, self.worker_id, clients, self.assigner, self.delivery, states,
                                               faults)
        self.upkeep = TargetUpkeep(plan, self.source_config, self.target_config,
                                   beside_others=self.membership_kind.prepares_beside_others, faults=faults)
        self.flow = FlowControl(plan, self.control, self.membership, self.outages, self.faults, clients, states)
        self.refresh = TopicRefresh(plan.name, self.upkeep, self.assigner, self.membership, faults,
                                    lambda: self.flow.state, self.clusters)

    def _lower_batch_cap(self, limit: int, topic: str) -> None:
        """A target topic takes smaller batches than the producer makes: rebuild it with batches that fit.

        A broker refuses a whole batch larger than its topic's `max.message.bytes`, and the copy's producer
        treats a refused record as fatal. `batch.size` is one setting per producer while limits are per topic,
        so the cap is the smallest limit among the topics written; records, their offset-syncs and the
        progress go through one producer (one transaction in exactly-once mode) for the progress to prove
        what was copied.
        """
        log.info("target topic %s takes batches of at most %d bytes (max.message.bytes): the producer's batches "
                 "are capped there (were %d)", topic, limit, self.clients.batch_cap)
        if not self.delivery.drain_before_new_producer(f"lowering the batch size for {topic}"):
            return
        self.clients.rebuild_producer(limit)
        self.delivery.continue_on_new_producer()
        if self.states:
            self.assigner.targets.producers_know(list(self.states))

    # ------------------------------------------------------------------ the loop
    def stop(self) -> None:
        self._stop.set()

    def run(self, max_seconds: float | None = None, until_caught_up: bool = False) -> RunSummary:
        """Copy until stopped (or for `max_seconds`, or until every partition reached the source's end).

        No automatic garbage collection meanwhile: the collector runs in whichever thread allocates when it is
        due, librdkafka's own too (they run the admin clients' result callbacks), and a client it finds unreachable
        there is destroyed from a thread of librdkafka's, which librdkafka forbids (confluent-kafka-python#2129).
        The copy's thread collects instead, between batches (`_collect_garbage`)."""
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            return self._run(max_seconds, until_caught_up)
        finally:
            if gc_was_enabled:
                gc.enable()

    def _run(self, max_seconds: float | None, until_caught_up: bool) -> RunSummary:
        self._build()
        self._start()
        started = time.monotonic()
        self._copy(self._periodic_work(started), started, max_seconds, until_caught_up)
        if self.faults.fatal:
            raise EngineError(self.faults.fatal)
        return self.summary(time.monotonic() - started)

    def _start(self) -> None:
        """The start-up: the delivery started, the start's reads, the target prepared, the first assignment."""
        # Before the stored progress is read: starting the delivery fences this flow's previous producer, and a
        # transaction it was committing when it died completes only then (its commit may be in flight), so the
        # progress read afterwards includes it; read before, it would be older than the target's records.
        log.info("delivery: %s", self.delivery.describe(self.plan.engine.progress_interval_s))
        self.delivery.start()
        # The reads of the start, at the same time: the flow's stored progress, its control topic and the target's
        # preparation (which needs the progress only once both clusters are read: the topics the flow writes are
        # its own); beside them, what the single engine's first assignment needs of the source
        # (`PartitionAssigner.read_ahead`), and the check that no engine of the other kind copies the flow.
        with ThreadPoolExecutor(4) as reader:
            source_listed: Future[TopicListing] | None = None  # the read-ahead's listing, the preparation's too
            ahead = None
            if self.membership_kind.takes_all_at_start:
                source_listed = Future()
                ahead = reader.submit(self.assigner.read_ahead, source_listed)
            stored = reader.submit(self.assigner.load_progress, self.membership.follows_progress)
            control = reader.submit(self.control.load)
            alone = reader.submit(self.membership.check_no_other_kind_runs)

            def managed() -> frozenset[str]:
                stored.result()
                return self.assigner.managed_topics()

            copyable = self.upkeep.prepare(managed, initial=True, clusters=self.clusters,
                                           list_source=source_listed.result if source_listed else None) or []
            stored.result()
            control.result()
            alone.result()
            if ahead is not None:
                ahead.result()  # before `follow`, which lists the plan's partitions from it
            self.flow.state = self.control.flow_state
            self.assigner.follow(copyable, initial=True)
        self.reporter.start_server()
        if self.flow_state != "stopped":
            if ahead is not None:  # what the start read serves this first assignment only
                self.assigner.targets.starting_from(self.upkeep.target_read)
            self.membership.acquire()
        else:
            log.info("the flow is stopped: waiting for `mirror-engine flows start`")
        self.assigner.forget_ahead()

    def _periodic_work(self, started: float) -> Scheduler:
        """What runs between consumed batches (`started`: when the copy began)."""
        engine = self.plan.engine
        idle_trim = IdleTrim(lambda: sum(state.records_copied for state in self.states.values()),
                             clock=time.monotonic)
        # The periodic work, between consumed batches: heartbeats and the status at once, the rest after an interval.
        tasks = [
            PeriodicTask("heartbeat", engine.heartbeat_interval_s, self.side.send_heartbeat),
            PeriodicTask("offset-syncs", engine.offset_sync_interval_s,
                         functools.partial(self.side.offset_syncs.send_periodic, engine.offset_lag_max),
                         engine.offset_sync_interval_s),
            PeriodicTask("progress", engine.progress_interval_s, self.delivery.store_progress,
                         engine.progress_interval_s),
            PeriodicTask("status", engine.status_interval_s, self.reporter.publish),
            PeriodicTask("log", engine.log_interval_s,
                         lambda: self.reporter.log_progress(time.monotonic() - started), engine.log_interval_s),
            PeriodicTask("control", 1.0, self.flow.follow, 1.0),
            # The first refresh as the copy starts: the start read the source configs of the topics it created only
            # (`TargetUpkeep.prepare`), and this one syncs the others' beside the copy, as MM2 syncs configs as it
            # starts.
            PeriodicTask("refresh", engine.refresh_interval_s, self.refresh.start),
            PeriodicTask("refreshed", min(1.0, engine.refresh_interval_s), self.refresh.follow,
                         min(1.0, engine.refresh_interval_s)),
            PeriodicTask("idle-trim", 1.0, idle_trim.check, 1.0),
            # What the other workers store, taken as it comes: a rebalance then reads only the last moments.
            PeriodicTask("progress-follow", 1.0, self.assigner.progress.poll, 1.0),
            PeriodicTask("collect", 1.0, self._collect_garbage, 1.0),
            # Workers: units given or taken by the group (its callbacks run here, on the copy's thread).
            PeriodicTask("group", 0.2, self.membership.serve),
        ]
        skipped = {"heartbeat": not engine.emit_heartbeats, "progress-follow": not self.membership.follows_progress,
                   "group": not self.membership.serves_group}
        return Scheduler([task for task in tasks if not skipped.get(task.name)], name="engine")

    def _copy(self, scheduler: Scheduler, started: float, max_seconds: float | None, until_caught_up: bool) -> None:
        """The copy's loop, until stopped, failed, out of time or caught up; then the shutdown (`_close`)."""
        engine = self.plan.engine
        copy, admit = self.copier.copy, self.assigner.limits.admit
        consume = functools.partial(self.clients.consumer.consume, engine.batch_size, timeout=0.2)
        # Every consumed batch makes thousands of short-lived message objects that the cyclic garbage collector
        # would scan over and over (15% of the copy's time when profiled): collected once a second (see `run`),
        # never the objects of the set-up (frozen by the first collection, `_collect_garbage`).
        self.copying.set()
        try:
            while not self._stop.is_set() and not self.faults.fatal:
                # Records whose target topic's record limits are still being read are held back (`LimitsGate`).
                copy(admit(consume) if self.flow.state != "paused" else self.flow.held())
                now = time.monotonic()
                scheduler.run_due()
                if max_seconds is not None and now - started >= max_seconds:
                    break
                if until_caught_up and self.caught_up():
                    break
        finally:
            self._close()

    def _close(self) -> None:
        """The parts stopped and closed (`_shutdown`), the refresh and the readers of the target too."""
        try:
            self.refresh.close()
            self._shutdown()
            self.control.close()
            self.assigner.progress.close()
        finally:
            gc.unfreeze()

    def _collect_garbage(self) -> None:
        """Once a second, the youngest objects' cycles; every minute, all of them (see `run`).

        The first one, a second into the copy, frees the set-up's cycles (a refused request's error and futures,
        say), then freezes what remains, never scanned again. Frozen without that collection, the set-up's
        garbage was kept for the whole run; collected before the copy, it would delay the first record."""
        self._collections += 1
        if self._collections == 1:
            gc.collect()
            gc.freeze()
            return
        gc.collect(2 if self._collections % 60 == 0 else 0)


    # ------------------------------------------------------------------ what it tells
    def caught_up(self) -> bool:
        """Every partition copied and acknowledged up to the source's end as last seen."""
        return all(
            state.failed
            or (state.all_acknowledged() and state.end_seen >= 0 and state.copied_position() >= state.end_seen)
            for state in self.states.values()
        )

    def lag(self) -> dict[TopicPartitionKey, int]:
        return self.reporter.lag()

    def build_status(self, exiting: bool = False) -> dict:
        return self.reporter.build(exiting)

    @property
    def status_snapshot(self) -> dict:
        """The last status published ({} until the engine's parts are built)."""
        reporter = getattr(self, "reporter", None)
        return reporter.snapshot if reporter is not None else {}

    def _shutdown(self) -> None:
        """Wait for every in-flight record and sync, store the final progress, close the clients."""
        self.membership.leave()
        self.reporter.publish(exiting=True)
        self.delivery.shutdown()
        self.membership.close()
        self.reporter.close()

    def summary(self, seconds: float) -> RunSummary:
        return RunSummary(
            records=self.membership.records_released + sum(s.records_copied for s in self.states.values()),
            seconds=seconds,
            failed_partitions={f"{s.topic}[{s.partition}]": s.failed for s in self.states.values() if s.failed},
        )
