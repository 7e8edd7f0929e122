"""The replication engine on real clusters: exact copies, exact offset-syncs, discovery."""

from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from mirror_engine.flow import InternalTopics, OffsetMap, load_progress
from mirror_engine.kafka import read_to_end
from mirror_engine.mm2 import Heartbeat, OffsetSync
from mirror_engine.plan import plan_from_dict
from mirror_engine.replication import OffsetSyncWriter, Replicator
from mirror_engine.replication.testing import copy_contract, record_producers
from tests.integration.kafka_data import (
    produce,
    produce_transactions,
    read_partition,
    wait_for_compaction_gaps,
)
from tests.integration.plans import create_topics, make_plan, plan_dict

pytestmark = pytest.mark.integration

# Recent timestamps: records older than the brokers' 7-day retention would be deleted under the test.
BASE_TS = int(time.time() * 1000) - 3_600_000
# (suffix, partitions)
PLAIN_TOPICS = [("a", 1), ("b", 2), ("c", 3), ("d", 4), ("e", 6), ("f", 1), ("g", 2), ("h", 5)]


def _plain_records(partitions: int, count: int, seed: int) -> list[tuple]:
    records = []
    for i in range(count):
        key = None if i % 17 == 0 else f"key-{seed}-{i % 50}".encode()
        value = None if i % 13 == 0 else f"value-{seed}-{i}".encode() * (1 + i % 4)  # None: a tombstone
        headers = [("n", str(i).encode()), ("empty", b""), ("null", None)] if i % 3 else None
        records.append((i % partitions, key, value, headers, BASE_TS + seed * 100_000 + i))
    return records


@pytest.fixture
def mixed_source(kafka_pair, unique_name):
    """Ten topics: plain ones with keys, headers and tombstones; a compacted one with gaps; a transactional one."""
    source, _ = kafka_pair
    p = f"{unique_name}-"
    topics = [NewTopic(p + s, n, 1) for s, n in PLAIN_TOPICS]
    topics.append(NewTopic(p + "compacted", 1, 1, config={
        "cleanup.policy": "compact", "segment.ms": "100", "min.cleanable.dirty.ratio": "0.001",
        "min.compaction.lag.ms": "0", "delete.retention.ms": "100"}))
    topics.append(NewTopic(p + "txn", 3, 1))
    create_topics(source, topics)
    for seed, (suffix, partitions) in enumerate(PLAIN_TOPICS):
        produce(source, p + suffix, _plain_records(partitions, 300 + 50 * seed, seed))
    # Round 2 supersedes only half the keys, so the survivors of round 1 leave gaps inside the log;
    # the last record rolls the segment so the cleaner may compact the others.
    for round_, keys, count in ((1, 10, 100), (2, 5, 100), (3, 1, 1)):
        produce(source, p + "compacted", [(0, f"k{i % keys}".encode(), f"v{round_}-{i}".encode(), None,
                                           BASE_TS + round_ * 1000 + i) for i in range(count)])
        time.sleep(0.5)
    wait_for_compaction_gaps(source, p + "compacted", 0)
    produce_transactions(source, p + "txn", 3, transactions=12, per_transaction=30, abort_every=3,
                         transactional_id=f"{unique_name}-txn")
    return p


def _all_topics(prefix: str) -> list[tuple[str, int]]:
    return [*((prefix + s, n) for s, n in PLAIN_TOPICS), (prefix + "compacted", 1), (prefix + "txn", 3)]


@pytest.fixture
def spread_producers(monkeypatch) -> int:
    """The mixed source's ten topics written by four producers (3 topics a producer at most, as a flow of 1,000
    topics gets 8 of 125); the full-queue tests below copy through one producer, as flows of fewer than 100 topics
    do."""
    monkeypatch.setattr(record_producers, "TOPICS_PER_PRODUCER", 3)
    return 4


def test_copy_keeps_every_record_in_order_drops_aborted_ones_and_translates_every_offset(kafka_pair, mixed_source,
                                                                                        spread_producers):
    source, target = kafka_pair
    plan = make_plan(source, target, mixed_source)
    replicator = Replicator(plan, source.client_config(), target.client_config())
    summary = replicator.run(max_seconds=180, until_caught_up=True)
    assert summary.ok, summary.failed_partitions
    assert len(replicator.clients.records.all()) == 1 + spread_producers  # and the main one, for side records

    for topic, partitions in _all_topics(mixed_source):
        for partition in range(partitions):
            expected = [r.content() for r in read_partition(source, topic, partition)]
            copied = [r.content() for r in read_partition(target, topic, partition)]
            assert copied == expected, f"{topic}[{partition}]"
    txn_values = [r.value for p in range(3) for r in read_partition(target, mixed_source + "txn", p)]
    assert txn_values and not [v for v in txn_values if v.startswith(b"aborted")]
    assert len(txn_values) == 8 * 30
    assert_offsets_translate_exactly(plan, source, target, _all_topics(mixed_source))


@pytest.mark.parametrize("exactly_once", [False, True], ids=["at-least-once", "exactly-once"])
def test_a_full_producer_queue_holds_offset_syncs_back_in_order(kafka_pair, mixed_source, monkeypatch,
                                                                 exactly_once):
    # The records' delivery callbacks write offset-syncs while the copy loop waits for room in the same
    # producer queue: with room for 5 records, the queue is full at nearly every callback (and the test says so
    # if none was held back).
    monkeypatch.setattr(copy_contract, "QUEUE_MAX_MESSAGES", 5)
    held: list[int] = []
    send = OffsetSyncWriter.send

    def counted_send(writer: OffsetSyncWriter, state, source: int, target: int) -> None:
        before = len(writer.unsent)
        send(writer, state, source, target)
        held.extend([source] if len(writer.unsent) > before else [])

    monkeypatch.setattr(OffsetSyncWriter, "send", counted_send)
    source, target = kafka_pair
    plan = make_plan(source, target, mixed_source, engine={"exactly_once": exactly_once})
    summary = Replicator(plan, source.client_config(), target.client_config()).run(max_seconds=180,
                                                                                   until_caught_up=True)
    assert summary.ok, summary.failed_partitions
    assert held, "no offset-sync was held back: the test no longer tests the hold-back"
    # The compacted topic is left out: the copy takes long enough here for the cleaners of both clusters to run
    # at different times, so the two logs may differ by what compaction removed (the copy itself is exact).
    topics = [(topic, n) for topic, n in _all_topics(mixed_source) if not topic.endswith("compacted")]
    for topic, partitions in topics:
        for partition in range(partitions):
            expected = [r.content() for r in read_partition(source, topic, partition)]
            assert [r.content() for r in read_partition(target, topic, partition)] == expected, f"{topic}[{partition}]"
    assert_offsets_translate_exactly(plan, source, target, topics)


def assert_offsets_translate_exactly(plan, source, target, copied_topics: list[tuple[str, int]]) -> None:
    """Every source offset of these topics, inside gaps and markers too, translates through the offset-syncs and
    the stored progress to its record's target offset."""
    topics = InternalTopics.for_plan(plan)
    offsets = OffsetMap()
    for message in read_to_end(target.client_config(), topics.offset_syncs):
        offsets.add(OffsetSync.from_record(message.key(), message.value()))
    for (topic, partition), progress in load_progress(target.client_config(), topics.progress).items():
        offsets.set_positions(topic, partition, progress.position, progress.target_position)

    checked = 0
    for topic, partitions in copied_topics:
        for partition in range(partitions):
            source_records = read_partition(source, topic, partition)
            target_records = read_partition(target, topic, partition)
            _low, end = Consumer({**source.client_config(), "group.id": "x"}).get_watermark_offsets(
                TopicPartition(topic, partition), timeout=10)
            pairs = list(zip([r.offset for r in source_records], [r.offset for r in target_records], strict=True))
            first = pairs[0][0]
            # Every source offset, inside gaps and markers too, up to the end: the target offset of the
            # first copied record at or after it, or the target's end past the last one.
            for g in range(first, end + 1):
                at_or_after = [t for s, t in pairs if s >= g]
                truth = at_or_after[0] if at_or_after else target_records[-1].offset + 1
                assert offsets.translate(topic, partition, g) == truth, f"{topic}[{partition}] offset {g}"
                checked += 1
            assert offsets.translate(topic, partition, end + 1) is None
    assert checked > 3000


def test_heartbeats_are_written_in_mm2_format(kafka_pair, unique_name):
    source, target = kafka_pair
    create_topics(source, [NewTopic(unique_name, 1, 1)])
    plan = make_plan(source, target, unique_name)
    before = int(time.time() * 1000)
    Replicator(plan, source.client_config(), target.client_config()).run(max_seconds=3)
    beats = [Heartbeat.from_record(m.key(), m.value()) for m in read_to_end(target.client_config(), "heartbeats")]
    mine = [b for b in beats if b.timestamp_ms >= before and (b.source_alias, b.target_alias) == ("src", "tgt")]
    assert len(mine) >= 2


def test_heartbeats_turned_off_are_not_written(kafka_pair, unique_name):
    source, target = kafka_pair
    create_topics(source, [NewTopic(unique_name, 1, 1)])
    data = plan_dict(source, target, unique_name, engine={"emit_heartbeats": False})
    data["source"]["alias"] = "quiet"
    Replicator(plan_from_dict(data), source.client_config(), target.client_config()).run(max_seconds=3)
    beats = [Heartbeat.from_record(m.key(), m.value()) for m in read_to_end(target.client_config(), "heartbeats")]
    assert not [b for b in beats if b.source_alias == "quiet"]


def test_topics_and_partitions_added_while_running_are_copied(kafka_pair, unique_name):
    source, target = kafka_pair
    p = f"{unique_name}-"
    create_topics(source, [NewTopic(p + "first", 1, 1)])
    produce(source, p + "first", [(0, b"k", f"v{i}".encode(), None, BASE_TS + i) for i in range(50)])
    plan = make_plan(source, target, p, engine={"refresh_interval_s": 1})
    replicator = Replicator(plan, source.client_config(), target.client_config())
    runner = threading.Thread(target=replicator.run, kwargs={"max_seconds": 90})
    runner.start()
    try:
        time.sleep(3)
        create_topics(source, [NewTopic(p + "later", 2, 1)])
        produce(source, p + "later", [(i % 2, b"k", f"later-{i}".encode(), None, BASE_TS + i) for i in range(40)])
        admin = AdminClient(source.client_config())
        admin.create_partitions([NewPartitions(p + "first", 3)])[p + "first"].result()
        time.sleep(1)
        produce(source, p + "first", [(2, b"k", f"new-partition-{i}".encode(), None, BASE_TS + i) for i in range(30)])

        deadline = time.monotonic() + 60
        expected = {(p + "later", 0): 20, (p + "later", 1): 20, (p + "first", 2): 30, (p + "first", 0): 50}
        while time.monotonic() < deadline:
            try:
                counts = {key: len(read_partition(target, *key)) for key in expected}
            except Exception:  # the topic or partition may not exist on the target yet
                counts = {}
            if counts == expected:
                break
            time.sleep(1)
        assert counts == expected
    finally:
        replicator.stop()
        runner.join(60)
