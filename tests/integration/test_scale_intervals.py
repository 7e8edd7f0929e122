"""The engine's periodic work does not grow with the partition count: the same engine on 40 and on 400 partitions, in
one test, asks the source for no partition's end at a status interval while it fetches them all (the consumer's
cached watermarks carry the ends), and asks its consumer for no statistics (librdkafka's statistics JSON names
every partition, about 1.5 KB each, and was built and parsed at every status interval); its refreshes ask the
target for the offsets of no partition it copies into; and the copy does not wait
for a refresh's preparation of the target, which describes every topic of the plan.

The large shapes (2,000 and 10,000 partitions) are measured by bench/scale.py."""

from __future__ import annotations

import gc
import threading
import time
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import NewTopic

from kafka_local.cluster import KafkaCluster
from mirror_engine.kafka import admin_client, wait_until_served
from mirror_engine.prepare.testing import reading as target_reading
from mirror_engine.replication import Replicator
from mirror_engine.replication.testing import TargetUpkeep, status_reporter
from mirror_engine.replication.testing import clients as engine_clients
from tests.integration.kafka_data import end_offsets
from tests.integration.plans import create_topics, make_plan

pytestmark = pytest.mark.integration

PARTITIONS = 4  # per topic
RECORDS = 5  # per partition
STATUS_INTERVAL_S = 0.3


class _Counted:
    """What the engine asks at its periodic work: partitions whose source end the status asked, status intervals,
    target partitions whose offsets the refreshes asked (whether records are there), refreshes, and the settings
    its source consumer was built with."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.ends_asked = self.intervals = self.target_partitions_asked = self.refreshes = 0
        self.consumer_settings: dict[str, Any] = {}
        real_list_offsets, real_consumer = status_reporter.list_offsets, engine_clients.Consumer
        real_publish = status_reporter.StatusReporter.publish
        real_ends, real_prepare = target_reading.list_offsets, TargetUpkeep.prepare

        def list_offsets(admin: Any, tps: list, *args: Any, **kwargs: Any) -> Any:
            self.ends_asked += len(tps)
            return real_list_offsets(admin, tps, *args, **kwargs)

        def consumer(settings: dict[str, Any]) -> Any:
            self.consumer_settings = dict(settings)
            return real_consumer(settings)

        def publish(reporter: Any, exiting: bool = False) -> None:
            self.intervals += not exiting
            real_publish(reporter, exiting)

        # The preparation asks a partition's start only where it asked its end (`topics_holding_data`).
        def target_ends(admin: Any, tps: list, *args: Any, **kwargs: Any) -> Any:
            self.target_partitions_asked += len(tps)
            return real_ends(admin, tps, *args, **kwargs)

        def prepare(upkeep: TargetUpkeep, managed: frozenset[str], initial: bool, clusters: Any = None,
                    list_source: Any = None) -> Any:
            result = real_prepare(upkeep, managed, initial, clusters, list_source)
            self.refreshes += not initial
            return result

        monkeypatch.setattr(status_reporter, "list_offsets", list_offsets)
        monkeypatch.setattr(target_reading, "list_offsets", target_ends)
        monkeypatch.setattr(TargetUpkeep, "prepare", prepare)
        monkeypatch.setattr(engine_clients, "Consumer", consumer)
        monkeypatch.setattr(status_reporter.StatusReporter, "publish", publish)


def _run_shape(source: KafkaCluster, target: KafkaCluster, name: str, topics: int,
               monkeypatch: pytest.MonkeyPatch) -> tuple[_Counted, dict]:
    """Copy `topics` x PARTITIONS partitions to the end, then a few status intervals of steady state: what the
    engine asked meanwhile, and its last status snapshot."""
    names = [f"{name}.t{i:03d}" for i in range(topics)]
    create_topics(source, [NewTopic(topic, PARTITIONS, 1) for topic in names], timeout_s=60)
    wait_until_served(admin_client(source.client_config()), names, timeout_s=60)  # leaders too, on a busy broker
    producer = Producer(source.client_config())
    for topic in names:
        for partition in range(PARTITIONS):
            for i in range(RECORDS):
                producer.produce(topic, b"v" * 50, b"k%d" % i, partition)
    assert producer.flush(120) == 0
    plan = make_plan(source, target, rf"{name}\.", name=name,
                     engine={"status_interval_s": STATUS_INTERVAL_S, "refresh_interval_s": 1.0, "status_port": -1})
    with monkeypatch.context() as patch:
        counted = _Counted(patch)
        engine = Replicator(plan, source.client_config(), target.client_config())
        runner = threading.Thread(target=engine.run, kwargs={"max_seconds": 300})
        runner.start()
        try:
            deadline = time.monotonic() + 180  # start-up included, on a busy machine
            while not (engine.copying.is_set() and engine.states and engine.caught_up()):
                assert time.monotonic() < deadline and runner.is_alive(), "the copy did not finish"
                time.sleep(0.1)
            counted.ends_asked = counted.intervals = counted.target_partitions_asked = counted.refreshes = 0
            while counted.refreshes < 2:  # steady state (nothing left to copy), at least two refreshes long
                assert time.monotonic() < deadline + 30 and runner.is_alive(), "no refresh"
                time.sleep(0.2)
            caught_up = engine.status_snapshot
        finally:
            engine.stop()
            runner.join(60)
    assert not engine.fatal
    return counted, caught_up


def test_status_intervals_and_refreshes_ask_nothing_per_partition(kafka_pair, unique_name, monkeypatch):
    source, target = kafka_pair
    small, small_status = _run_shape(source, target, f"{unique_name}-s", 10, monkeypatch)  # 40 partitions
    large, large_status = _run_shape(source, target, f"{unique_name}-l", 100, monkeypatch)  # 400 partitions

    assert small.intervals >= 3 and large.intervals >= 3, (small.intervals, large.intervals)
    # Before: every refresh asked the target for the offsets of every partition the flow copies into, to learn
    # whether another writer filled them (the flow's own topics hold its own records).
    assert small.target_partitions_asked == large.target_partitions_asked == 0, \
        (small.target_partitions_asked, large.target_partitions_asked)
    # Before: every status interval asked the source for the end of every partition (400 per interval).
    assert small.ends_asked == large.ends_asked == 0, (small.ends_asked, large.ends_asked)
    # Before: statistics every status interval, their JSON listing every partition.
    for counted in (small, large):
        assert int(counted.consumer_settings.get("statistics.interval.ms", 0)) == 0
        assert "stats_cb" not in counted.consumer_settings
    # The status still shows the lag from the consumer's watermarks (0: every record copied) and the bytes read.
    for status, partitions in ((small_status, 40), (large_status, 400)):
        assert status["partition_count"] == partitions and status["lag"] == 0, status["lag"]
        assert all(p["bytes_fetched"] >= RECORDS * 52 for p in status["partitions"]), status["partitions"][:3]


def test_the_copy_goes_on_while_a_refresh_prepares_the_target(kafka_pair, unique_name, monkeypatch):
    """A refresh prepares the target (every topic, config and ACL of the plan described on both clusters: seconds at
    a thousand topics, every `engine.refresh_interval_s`): the copy does not wait for it."""
    source, target = kafka_pair
    topic = f"{unique_name}.t"
    create_topics(source, [NewTopic(topic, 2, 1)])
    plan = make_plan(source, target, rf"{unique_name}\.", name=unique_name,
                     engine={"refresh_interval_s": 0.5, "status_port": -1})
    remote = plan.policy().format_remote_topic(plan.source.alias, topic)
    refreshing, release = threading.Event(), threading.Event()
    prepare = TargetUpkeep.prepare

    def slow_prepare(self: TargetUpkeep, managed: frozenset[str], initial: bool, clusters: Any = None,
                     list_source: Any = None) -> Any:
        if not initial:
            refreshing.set()
            release.wait(60)  # as slow as the test wants
        return prepare(self, managed, initial, clusters, list_source)

    monkeypatch.setattr(TargetUpkeep, "prepare", slow_prepare)
    engine = Replicator(plan, source.client_config(), target.client_config())
    runner = threading.Thread(target=engine.run, kwargs={"max_seconds": 120})
    runner.start()
    try:
        assert refreshing.wait(60), "no refresh started"
        producer = Producer(source.client_config())
        for i in range(50):
            producer.produce(topic, b"v", b"k%d" % i, i % 2)
        assert producer.flush(30) == 0
        deadline = time.monotonic() + 30
        # Before: the refresh ran on the copy's thread, which waited for it (here until released, after 60 s).
        while sum(end_offsets(target, remote, 2)) < 50:
            assert time.monotonic() < deadline and runner.is_alive(), "the copy waited for the refresh"
            time.sleep(0.2)
    finally:
        release.set()
        engine.stop()
        runner.join(60)
    assert not engine.fatal


def test_garbage_is_collected_on_the_copy_thread_only(kafka_pair, unique_name):
    """The cyclic garbage collector runs in whichever thread allocates when it is due, librdkafka's own too (they run
    the admin clients' result callbacks, as the status's and the checkpoints' requests answer): a client found
    unreachable there is destroyed from a thread of librdkafka's, which it forbids. While the engine runs, garbage is
    collected on its copy thread only."""
    source, target = kafka_pair
    topic = f"{unique_name}.t"
    create_topics(source, [NewTopic(topic, 2, 1)])
    producer = Producer(source.client_config())
    for i in range(200):
        producer.produce(topic, b"v", b"k%d" % i, i % 2)
    assert producer.flush(30) == 0
    plan = make_plan(source, target, rf"{unique_name}\.", name=unique_name, engine={"status_port": -1})
    collected_on: list[str] = []
    # Watched while the engine copies: before its start and after it returns, the collector is the process's own
    # again, and threads other tests left (a refresh finishing after its engine stopped) may run it.
    watching = threading.Event()

    def on_collection(phase: str, info: dict) -> None:
        if phase == "start" and watching.is_set():
            collected_on.append(threading.current_thread().name)

    engine = Replicator(plan, source.client_config(), target.client_config())
    runner = threading.Thread(target=engine.run, kwargs={"max_seconds": 120}, name="engine-copy")
    gc.callbacks.append(on_collection)
    runner.start()
    try:
        deadline = time.monotonic() + 90
        while not (engine.copying.is_set() and engine.states and engine.caught_up()):
            assert time.monotonic() < deadline and runner.is_alive(), "the copy did not finish"
            time.sleep(0.1)
        watching.set()
        # Before: collected automatically, in any thread (the thresholds only raised).
        automatic = gc.isenabled()
        garbage = [[] for _ in range(50_000)]  # what would trigger a collection in this thread
        for cycle in garbage:
            cycle.append(cycle)
        del garbage
        time.sleep(2.5)  # a few of the engine's collections
    finally:
        watching.clear()
        engine.stop()
        runner.join(60)
        gc.callbacks.remove(on_collection)
    assert not engine.fatal
    assert not automatic
    assert collected_on and set(collected_on) == {"engine-copy"}, collected_on
