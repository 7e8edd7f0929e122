"""What the engine does does not grow with the cluster: the same engine on 60 and on 600 partitions, in one test,
starts the same way (`prepare` made the flow's internal topics with the target topics, so `run` creates none and
waits for none; the copy starts without waiting for the checkpoint loop; its start asks as many admin requests)
and writes status records of about the same size and as few log lines an interval.

The large shapes (2,000 and 10,000 partitions) are measured by bench/scale.py; this keeps the bounds from
growing back on a shape small enough for every test run."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from kafka_local.cluster import KafkaCluster
from mirror_engine.flow import InternalTopics
from mirror_engine.kafka import admin_client, list_offsets, wait_until_served
from mirror_engine.kafka.testing import topics as topics_module
from mirror_engine.prepare import prepare_target
from mirror_engine.replication import FlowRun
from mirror_engine.replication.testing import beside_the_copy
from tests.integration.kafka_data import end_offsets
from tests.integration.plans import create_topics, make_plan

pytestmark = pytest.mark.integration

PARTITIONS = 4  # per topic
RECORDS = 5  # per partition
SUMMARY = "copied "  # the first words of the progress log's summary line


def _status_records(target: KafkaCluster, topic: str) -> list[int]:
    """The size of every record of a status topic."""
    consumer = Consumer({**target.client_config(), "group.id": "test-status-sizes", "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, 0, 0)])
    sizes = []
    try:
        while (message := consumer.poll(10)) is not None and not message.error():
            sizes.append(len(message.value() or b""))
    finally:
        consumer.close()
    return sizes


def _progress_log_lines(records: list[logging.LogRecord]) -> list[int]:
    """Lines each progress log wrote: its summary and the partition lines after it."""
    counts: list[int] = []
    for record in records:
        message = record.getMessage()
        if record.name == "mirror_engine.replication.engine" and message.startswith(SUMMARY):
            counts.append(1)
        elif counts and record.name == "mirror_engine.replication.engine" and message.startswith("  "):
            counts[-1] += 1
    return counts


def _internal_topics_served(target: KafkaCluster, topics: InternalTopics) -> list[str]:
    """The flow's internal topics that the target's metadata does not serve yet (with a leader), asked once."""
    metadata = admin_client(target.client_config()).list_topics(timeout=10).topics
    return [name for name in topics.specs()
            if name not in metadata or metadata[name].error is not None
            or any(p.leader < 0 for p in metadata[name].partitions.values())]


# The admin requests counted at start-up (an admin call is a request to each broker concerned; ListOffsets and
# DescribeConfigs are asked in one call for all partitions and topics in this test, see `_run_shape`). ListOffsets
# is counted where the engine makes the call (`offsets_request`, the client's call without its Python method).
COUNTED_CALLS = ("list_topics", "describe_configs", "describe_topics", "describe_consumer_groups",
                 "list_consumer_groups", "create_topics", "describe_acls")


class _StartCalls:
    """Admin calls made from the engine's start until it copies, by name; and the topics whose configs they asked,
    and those of the partitions whose start (earliest offset) they asked."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, copying: Callable[[], bool]) -> None:
        self.calls: Counter[str] = Counter()
        self.configs_asked: set[str] = set()
        self.starts_asked: set[str] = set()
        for name in COUNTED_CALLS:
            monkeypatch.setattr(AdminClient, name, self._counted(name, getattr(AdminClient, name), copying))
        offsets_request = topics_module.offsets_request

        def offsets_counted(admin: AdminClient, tps: list[TopicPartition], spec: OffsetSpec, *args: Any) -> Any:
            if not copying():
                self.calls["list_offsets"] += 1
                if spec._value == OffsetSpec.earliest()._value:
                    self.starts_asked.update(tp.topic for tp in tps)
            return offsets_request(admin, tps, spec, *args)

        monkeypatch.setattr(topics_module, "offsets_request", offsets_counted)

    def _counted(self, name: str, call: Callable[..., Any], copying: Callable[[], bool]) -> Callable[..., Any]:
        def counted(admin: AdminClient, asked: Any = None, *args: Any, **kwargs: Any) -> Any:
            if not copying():
                self.calls[name] += 1
                if name == "describe_configs":
                    self.configs_asked.update(resource.name for resource in asked)
            return call(admin, *(() if asked is None else (asked,)), *args, **kwargs)

        return counted


def _run_shape(source: KafkaCluster, target: KafkaCluster, name: str, topics: int, caplog: pytest.LogCaptureFixture,
               monkeypatch: pytest.MonkeyPatch) -> tuple[list[int], list[int], list[str], _StartCalls]:
    """`prepare` then `run` (with engine.run_checkpoints) over `topics` x PARTITIONS partitions, status and log every
    0.3 s, the checkpoint loop held back until the copy is done: (status record sizes, log lines per progress log,
    the engine's log lines about creating or waiting for internal topics, the admin calls of its start)."""
    names = [f"{name}.t{i:03d}" for i in range(topics)]
    # The default policy: the target topics' names (`src.<topic>`) tell them from the source's in the calls counted.
    plan = make_plan(source, target, rf"{name}\.", name=name, replication_policy={"type": "default"},
                     engine={"status_interval_s": 0.3, "log_interval_s": 0.3, "progress_interval_s": 0.2,
                             "run_checkpoints": True})
    internal = InternalTopics.for_plan(plan)
    remote = [plan.policy().format_remote_topic(plan.source.alias, topic) for topic in names]
    create_topics(source, [NewTopic(topic, PARTITIONS, 1) for topic in names], timeout_s=60)
    preparation = prepare_target(plan, source.client_config(), target.client_config(), apply=True)
    assert preparation.applied is not None and not preparation.failed, preparation.failed
    # Made with the target topics and served when `prepare` returns: before, `run` made them after the burst of
    # partitions `prepare` had asked for, and waited for the broker to create those first.
    assert not _internal_topics_served(target, internal)
    # `prepare` waits 15 s for the topics' leaders: a broker as busy as a shared test machine may need longer.
    wait_until_served(admin_client(target.client_config()), remote, timeout_s=60)
    # And until their logs answer (a broker creates them after the leaders show): else the start's reads are asked
    # again, and the calls counted below would count the broker's pace.
    list_offsets(admin_client(target.client_config()), [TopicPartition(topic, p) for topic in remote
                                                        for p in range(PARTITIONS)], OffsetSpec.latest(), 60)
    # Requests unanswered for 10 s are sent again on a new connection (a copy is harmless here: the copy's end is
    # waited for with `>=`): in one CI run the source answered none of the requests after the 190th of 600 for the
    # whole 60 s (librdkafka's defaults wait 30 s for a request and 60 s for a connection), with nothing in its log.
    producer = Producer({**source.client_config(), "socket.timeout.ms": 10_000, "request.timeout.ms": 10_000})
    delivered: Counter[str] = Counter()

    def count(error: object, message: Any) -> None:
        if error is None:
            delivered[message.topic()] += 1

    for topic in names:
        for partition in range(PARTITIONS):
            for i in range(RECORDS):
                producer.produce(topic, b"v" * 50, b"k%d" % i, partition, on_delivery=count)
    left = producer.flush(120)
    short = [topic for topic in names if delivered[topic] < PARTITIONS * RECORDS]
    assert left == 0, f"{left} records not delivered in 120 s, to {len(short)} topics from {short[:1]}"

    # The checkpoint loop is built only once the copy is done: the copy's start-up must not wait for it.
    copied = threading.Event()
    real_loop = beside_the_copy.CheckpointLoop

    def held_back(*args: object, **kwargs: object) -> object:
        # Before, `run` built the loop before its first record: this waited for a copy that could not start.
        assert copied.wait(60), "the checkpoint loop was built before the copy, which never started"
        return real_loop(*args, **kwargs)

    monkeypatch.setattr(beside_the_copy, "CheckpointLoop", held_back)
    # ListOffsets and DescribeConfigs in one call whatever the count (500 partitions and 100 topics a call otherwise),
    # so that a call made per partition or per topic shows as calls that grow with the shape.
    monkeypatch.setattr(topics_module, "LIST_OFFSETS_BATCH", 100_000)
    monkeypatch.setattr(topics_module, "CONFIG_BATCH", 100_000)
    flow = FlowRun(plan, source.client_config(), target.client_config())
    start = _StartCalls(monkeypatch, lambda: flow.replicator.copying.is_set())
    caplog.clear()
    runner = threading.Thread(target=flow.run, kwargs={"max_seconds": 120})
    runner.start()
    try:
        deadline = time.monotonic() + 90
        while sum(sum(end_offsets(target, topic, PARTITIONS)) for topic in remote[-3:]) < 3 * PARTITIONS * RECORDS:
            assert time.monotonic() < deadline and runner.is_alive(), "the copy did not finish"
            time.sleep(0.2)
        time.sleep(1.5)  # a few status and log intervals of the steady state
    finally:
        copied.set()
        flow.stop()
        runner.join(60)
    assert not flow.replicator.fatal
    internal_lines = [record.getMessage() for record in caplog.records
                      if record.name.startswith("mirror_engine") and "internal topic" in record.getMessage()]
    return (_status_records(target, internal.status), _progress_log_lines(caplog.records), internal_lines, start)


def test_start_up_status_records_and_log_lines_do_not_grow_with_the_partition_count(kafka_pair, unique_name, caplog,
                                                                                     monkeypatch):
    source, target = kafka_pair
    caplog.set_level(logging.INFO, logger="mirror_engine")
    small_status, small_log, small_internal, small_start = _run_shape(source, target, f"{unique_name}-s", 15, caplog,
                                                                      monkeypatch)  # 60 partitions
    large_status, large_log, large_internal, large_start = _run_shape(source, target, f"{unique_name}-l", 150,
                                                                      caplog, monkeypatch)  # 600 partitions
    small_calls, large_calls = small_start.calls, large_start.calls

    # The start's requests are batched: as many at 600 partitions as at 60 (a request per topic or per partition
    # would be 10 times as many), give or take a retry of a broker that answered late.
    assert small_calls["list_offsets"] and small_calls["describe_configs"], small_calls
    for name in (*COUNTED_CALLS, "list_offsets"):
        assert large_calls[name] <= small_calls[name] + 2, (name, dict(small_calls), dict(large_calls))

    # What the start asks is what the first records need: of the source topics `prepare` gave a target topic, no
    # config (the first refresh syncs them, beside the copy; before, the start read every source topic's configs);
    # of the target's new, empty partitions, no start (their ends say no record was ever written there; before,
    # the start asked the earliest offset of every target partition as well).
    for shape, start in ((f"{unique_name}-s.", small_start), (f"{unique_name}-l.", large_start)):  # source topics
        assert start.configs_asked and not {topic for topic in start.configs_asked if topic.startswith(shape)}, \
            sorted(start.configs_asked)[:5]
        assert start.starts_asked and not {topic for topic in start.starts_asked if not topic.startswith(shape)}, \
            sorted(start.starts_asked)[:5]

    # `run` after `prepare` created no internal topic and waited for none, at either size.
    assert small_internal == large_internal == [], (small_internal, large_internal)

    assert small_log and large_log and small_status and large_status
    # Before: a status record listed every partition (about 350 bytes each: 210 KB at 600 partitions), and
    # the log a line per partition that moved (600 lines at the first interval).
    assert max(large_status) <= 64 * 1024
    assert max(large_status) < 1.5 * max(small_status), (max(small_status), max(large_status))
    # A summary, the partitions most behind, "and N more": the same few lines at any partition count (whether
    # a log interval fell while the copy was behind depends on the timing, so each is held to the bound).
    bound = 7  # the summary, five partitions, "and N more"
    assert max(small_log) <= bound and max(large_log) <= bound, (small_log, large_log)
