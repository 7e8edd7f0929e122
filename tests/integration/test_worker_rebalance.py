"""Workers and the group's rebalances: partitions added on the source, and joins and leaves at a larger shape."""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from kafka_local.cluster import KafkaCluster
from mirror_engine.flow import InternalTopics, ensure_internal_topics, progress_key
from mirror_engine.flow.testing import progress as stored_progress
from mirror_engine.replication import Replicator
from mirror_engine.replication.testing import TargetUpkeep, WorkerGroup
from tests.integration.kafka_data import produce, read_partition
from tests.integration.plans import create_topics, make_plan

pytestmark = pytest.mark.integration


def _read_all(cluster: KafkaCluster, keys: set[tuple[str, int]]) -> dict[tuple[str, int], list[bytes]]:
    """Every record's value of these partitions, in order, with one consumer (not one per partition)."""
    consumer = Consumer({**cluster.client_config(), "group.id": "test-reader", "enable.auto.commit": False})
    ends = {key: consumer.get_watermark_offsets(TopicPartition(*key), timeout=10)[1] for key in keys}
    records: dict[tuple[str, int], list[bytes]] = {key: [] for key in keys}
    todo = {key for key, end in ends.items() if end > 0}
    consumer.assign([TopicPartition(*key, OFFSET_BEGINNING) for key in todo])
    deadline = time.monotonic() + 60
    try:
        while todo:
            assert time.monotonic() < deadline, f"{len(todo)} partition(s) not read to their end"
            for message in consumer.consume(10_000, timeout=1):
                assert message.error() is None, message.error()
                key = (message.topic(), message.partition())
                records[key].append(message.value())
                if message.offset() + 1 >= ends[key]:
                    todo.discard(key)
    finally:
        consumer.close()
    return records


def _copied(cluster: KafkaCluster, topic: str, partition: int) -> int:
    try:
        return len(read_partition(cluster, topic, partition))
    except KafkaException:  # the partition does not exist yet
        return 0


def test_a_worker_offered_a_partition_the_target_lacks_copies_it_once_the_target_has_it(
        kafka_pair, unique_name, monkeypatch, caplog):
    """The group offers a partition added on the source as soon as the worker's consumer sees it, which may be
    before the worker's refresh created it on the target: the worker holds it until then, instead of asking the
    target for the offsets of a partition it does not have until the request times out (60 s)."""
    source, target = kafka_pair
    topic = f"{unique_name}-grow"
    create_topics(source, [NewTopic(topic, 1, 1)])
    produce(source, topic, [(0, b"k", f"v{i}".encode(), None, 0) for i in range(20)])
    plan = make_plan(source, target, topic, engine={"refresh_interval_s": 1, "session_timeout_s": 6})

    # The target's preparation on refresh waits until the test lets it: the group offers the new partition first.
    caplog.set_level(logging.INFO, logger="mirror_engine.replication.engine")
    target_ready = threading.Event()
    prepare = TargetUpkeep.prepare

    def late_prepare(self, managed, initial, clusters=None, list_source=None):
        if not initial and not target_ready.is_set():
            return None
        return prepare(self, managed, initial, clusters, list_source)
    monkeypatch.setattr(TargetUpkeep, "prepare", late_prepare)

    replicator = Replicator(plan, source.client_config(), target.client_config(), worker_id="w1")
    runner = threading.Thread(target=replicator.run, kwargs={"max_seconds": 120})
    runner.start()
    try:
        deadline = time.monotonic() + 60
        while _copied(target, topic, 0) < 20:
            assert time.monotonic() < deadline, "the first partition was not copied"
            time.sleep(0.5)
        admin = AdminClient(source.client_config())
        admin.create_partitions([NewPartitions(topic, 2)])[topic].result()
        time.sleep(1)
        produce(source, topic, [(1, b"k", f"new-{i}".encode(), None, 0) for i in range(30)])
        # The worker's consumer sees the partition within a refresh interval (1 s) and the group offers it.
        time.sleep(5)
        target_ready.set()
        deadline = time.monotonic() + 30  # half the 60 s the old worker waited for the target's offsets
        while (copied := _copied(target, topic, 1)) < 30:
            assert time.monotonic() < deadline, f"{copied} of 30 records of the added partition copied"
            time.sleep(0.5)
        assert [r.value for r in read_partition(target, topic, 1)] == [f"new-{i}".encode() for i in range(30)]
        assert runner.is_alive() and not replicator.fatal
        assert "held for their target partition: on the target now" in caplog.text  # offered before prepared
    finally:
        replicator.stop()
        runner.join(60)


class RebalanceWork:
    """What the workers' group callbacks (and the taking of the units they give, right after) do while they run,
    per plan: the admin requests they send, the lines they
    log and the stored progress records they decode (each plan's workers run in threads of their own, side by side
    with other plans')."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.counts: dict[str, list[int]] = {}  # plan -> [requests, lines, characters, progress records decoded]
        self._inside = threading.local()  # .plan: the plan whose callback runs in this thread
        for name in ("_on_assign", "_take", "_on_revoke", "_on_lost"):
            monkeypatch.setattr(WorkerGroup, name, self._counted_callback(getattr(WorkerGroup, name)))
        for name in ("list_offsets", "list_topics", "describe_configs", "describe_topics", "create_partitions",
                     "create_topics", "describe_consumer_groups", "list_consumer_group_offsets"):
            monkeypatch.setattr(AdminClient, name, self._counted_request(getattr(AdminClient, name)))
        decoded = stored_progress.decoded

        def counted_decoded(messages, decode):
            messages = list(messages)
            self._add(3, len(messages))
            return decoded(messages, decode)
        monkeypatch.setattr(stored_progress, "decoded", counted_decoded)
        handler = logging.Handler(logging.INFO)
        handler.emit = self._count_line  # type: ignore[method-assign]
        engine_log = logging.getLogger("mirror_engine")
        engine_log.addHandler(handler)
        monkeypatch.setattr(engine_log, "level", logging.INFO)
        self._handler = handler
        self._lock = threading.Lock()

    def _counted_callback(self, callback):
        def counted(member, *args):
            self._inside.plan = member.plan.name
            try:
                return callback(member, *args)
            finally:
                self._inside.plan = None
        return counted

    def _add(self, index: int, amount: int) -> None:
        plan = getattr(self._inside, "plan", None)
        if plan is not None:
            with self._lock:
                self.counts.setdefault(plan, [0, 0, 0, 0])[index] += amount

    def _counted_request(self, request):
        def counted(admin, *args, **kwargs):
            self._add(0, 1)
            return request(admin, *args, **kwargs)
        return counted

    def _count_line(self, record: logging.LogRecord) -> None:
        self._add(1, 1)
        self._add(2, len(record.getMessage()))

    def take(self, plan: str) -> tuple[int, int, int, int]:
        """(requests, lines, characters, progress records decoded) of this plan's callbacks since the last call."""
        with self._lock:
            requests, lines, characters, decoded = self.counts.pop(plan, [0, 0, 0, 0])
        return requests, lines, characters, decoded

    def close(self) -> None:
        logging.getLogger("mirror_engine").removeHandler(self._handler)


def _join_and_leave(source: KafkaCluster, target: KafkaCluster, prefix: str, topics: int, partitions: int,
                    work: RebalanceWork, history: int = 0) -> dict[str, tuple[int, int, int, int]]:
    """w1 copies alone; w2 joins; w1 leaves; records keep coming all along. What the callbacks did at the join and
    at the leave; then every source record is on the target once, partition by partition. `history`: records the
    flow's progress topic holds before the workers start (as a flow's age leaves there)."""
    names = [f"{prefix}.t{i:03d}" for i in range(topics)]
    create_topics(source, [NewTopic(name, partitions, 1) for name in names], timeout_s=60)
    producer = Producer({**source.client_config(), "linger.ms": 5, "enable.idempotence": True})
    sent = 0

    def send(count: int) -> None:  # across every partition in turn, each value unique
        nonlocal sent
        for i in range(sent, sent + count):
            producer.produce(names[i % topics], f"r{i}".encode(), b"k", (i // topics) % partitions)
            producer.poll(0)
        sent += count
    send(2 * topics * partitions)
    plan = make_plan(source, target, prefix + ".", name=prefix[-40:].strip("-_"),
                     engine={"session_timeout_s": 6, "refresh_interval_s": 600, "status_interval_s": 1})
    everything = {(name, p) for name in names for p in range(partitions)}
    if history:
        _store_history(target, plan, history)
    workers = {w: Replicator(plan, source.client_config(), target.client_config(), worker_id=w) for w in ("w1", "w2")}
    errors: dict[str, BaseException] = {}

    def run(w: str) -> None:
        try:
            workers[w].run(max_seconds=240)
        except BaseException as error:
            errors[w] = error
            raise
    threads = {w: threading.Thread(target=run, args=(w,)) for w in workers}

    def wait(condition, what: str, live: bool = True) -> None:
        deadline = time.monotonic() + 90
        while not condition():
            assert time.monotonic() < deadline, f"{prefix}: timed out waiting for {what}"
            assert not errors, f"{prefix}: a worker failed: {errors}"
            if live:
                send(topics)  # the live records of the run
            time.sleep(0.3)

    def owned(w: str) -> set:
        assigner = getattr(workers[w], "assigner", None)  # built once the worker runs
        return set(workers[w].states) | (assigner.awaiting_target if assigner else set())

    def units(w: str) -> set[int]:  # the work units the group gave the worker, their partitions taken
        membership = getattr(workers[w], "membership", None)
        return membership.held - membership._to_take if isinstance(membership, WorkerGroup) else set()

    def all_units() -> set[int]:
        return set(range(workers["w1"].membership.units))
    figures = {}
    try:
        threads["w1"].start()
        wait(lambda: owned("w1") == everything and units("w1") == all_units(), "w1 to own every partition")
        work.take(plan.name)
        threads["w2"].start()
        # Settled: the units shared, each taken (a unit may hold none of a small flow's partitions).
        wait(lambda: units("w2") and not units("w1") & units("w2") and units("w1") | units("w2") == all_units()
             and not owned("w1") & owned("w2") and owned("w1") | owned("w2") == everything, "the join to settle")
        figures["join"] = work.take(plan.name)
        workers["w1"].stop()
        threads["w1"].join(60)
        wait(lambda: units("w2") == all_units() and owned("w2") == everything, "w2 to take every partition")
        figures["leave"] = work.take(plan.name)
        assert producer.flush(60) == 0, "the source did not take every record"
        wait(workers["w2"].caught_up, "w2 to copy to the end", live=False)
    finally:
        for w, replicator in workers.items():
            replicator.stop()
            if threads[w].is_alive() or threads[w].ident is not None:
                threads[w].join(60)
    copied, original = _read_all(target, everything), _read_all(source, everything)
    wrong = [key for key in sorted(everything) if copied[key] != original[key]]
    assert not wrong, f"{len(wrong)} partition(s) differ, e.g. {wrong[0]}: {len(copied[wrong[0]])} records on the " \
                      f"target, {len(original[wrong[0]])} on the source"
    return figures


def test_a_join_and_a_leave_cost_the_same_requests_and_log_lines_at_a_larger_shape(
        kafka_pair, unique_name, monkeypatch):
    """Two workers, one joining and one leaving, at 4 and at 240 partitions in the same run: the group's callbacks
    send as many requests and log as many lines at both (nothing per partition or per topic in sequence), their
    lines do not grow with the assignment, and the target holds every record once."""
    source, target = kafka_pair
    work = RebalanceWork(monkeypatch)
    try:  # side by side: the same machine, as busy, for both
        with ThreadPoolExecutor(2) as pool:
            small_run = pool.submit(_join_and_leave, source, target, f"{unique_name}-small", 2, 2, work)
            large_run = pool.submit(_join_and_leave, source, target, f"{unique_name}-large", 60, 4, work)
            small, large = small_run.result(), large_run.result()
    finally:
        work.close()
    for step in ("join", "leave"):
        (requests, lines, characters, _), (small_requests, small_lines, small_characters, _) = large[step], small[step]
        print(f"{step}: at 240 partitions {large[step]}, at 4 {small[step]} (requests, log lines, characters)")
        assert requests <= small_requests + 2, f"{step}: {requests} requests at 240 partitions, " \
                                               f"{small_requests} at 4"
        assert lines <= small_lines + 2, f"{step}: {lines} log lines at 240 partitions, {small_lines} at 4"
        # The assignment is 60 times as large (30 times as many topics): its lines grow far less (they name at most
        # five topics: 2.5 times the small shape's two, with these long test names about 4 times the characters).
        assert characters / max(lines, 1) <= 8 * small_characters / max(small_lines, 1), \
            f"{step}: {characters} characters in {lines} lines at 240 partitions, {small_characters} in " \
            f"{small_lines} at 4"


def _store_history(target: KafkaCluster, plan, records: int) -> None:
    """`records` progress records in the flow's progress topic, none of them about the plan's partitions (resets of
    partitions of a topic the plan does not copy): the history a flow's age leaves, read or not read."""
    topic = InternalTopics.for_plan(plan).progress
    ensure_internal_topics(AdminClient(target.client_config()), InternalTopics.for_plan(plan))
    producer = Producer({**target.client_config(), "linger.ms": 20})
    for i in range(records):
        while True:
            try:
                producer.produce(topic, None, progress_key(plan.source.alias, "gone", i % 500), 0)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(60) == 0


def test_a_join_and_a_leave_read_no_more_of_the_stored_progress_after_a_long_history(
        kafka_pair, unique_name, monkeypatch):
    """The group's callbacks do not grow with the flow's age: two flows side by side, alike but for 10,000 records
    of history in one's progress topic, decode as many stored progress records in their callbacks at a join and
    at a leave (the workers follow the progress topic: a callback reads only what was stored since), and the
    target holds every record once. Reading the topic from its start there outlasted the group's session at
    2,000 partitions a few minutes into a run."""
    source, target = kafka_pair
    work = RebalanceWork(monkeypatch)
    try:
        with ThreadPoolExecutor(2) as pool:
            fresh_run = pool.submit(_join_and_leave, source, target, f"{unique_name}-fresh", 3, 2, work)
            aged_run = pool.submit(_join_and_leave, source, target, f"{unique_name}-aged", 3, 2, work, 10_000)
            fresh, aged = fresh_run.result(), aged_run.result()
    finally:
        work.close()
    for step in ("join", "leave"):
        decoded, fresh_decoded = aged[step][3], fresh[step][3]
        print(f"{step}: {decoded} stored progress records decoded in the callbacks after a history of 10,000, "
              f"{fresh_decoded} with none")
        assert decoded <= fresh_decoded + 20, f"{step}: {decoded} progress records decoded in the callbacks after " \
                                              f"a history of 10,000 records, {fresh_decoded} without"
