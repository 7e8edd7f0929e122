"""The engine on real clusters when the target cannot take a record: only that record's partition stops."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import NewTopic

from kafka_local.cluster import KafkaCluster
from mirror_engine.kafka import batch_size_alone
from mirror_engine.observe import read_worker_statuses
from mirror_engine.replication import Replicator
from mirror_engine.replication.testing import delivery, limits_gate
from tests.integration.kafka_data import produce, read_partition
from tests.integration.plans import create_topics, make_plan

pytestmark = pytest.mark.integration

BASE_TS = int(time.time() * 1000) - 600_000
TARGET_LIMIT = 102_400  # a common max.message.bytes for a topic, ten times below the broker's default


def _small(partition: int, start: int, stop: int, value_bytes: int = 1000) -> list[tuple]:
    # Random values do not compress: the engine's default 1 MB batches of them stay far above 100 KB.
    return [(partition, f"k{i}".encode(), os.urandom(value_bytes), [("n", str(i).encode())], BASE_TS + i)
            for i in range(start, stop)]


def _exactly(partition: int, number: int, batch_bytes: int) -> tuple:
    """A record that makes a batch of exactly `batch_bytes` alone."""
    key, headers = b"at-limit", [("n", str(number).encode()), ("ü", None)]
    value_bytes = batch_bytes - batch_size_alone(key, b"", headers)
    while batch_size_alone(key, bytes(value_bytes), headers) > batch_bytes:
        value_bytes -= 1
    value = os.urandom(value_bytes)
    assert batch_size_alone(key, value, headers) == batch_bytes
    return (partition, key, value, headers, BASE_TS + number)


def _run(plan, source: KafkaCluster, target: KafkaCluster):
    replicator = Replicator(plan, source.client_config(), target.client_config())
    summary = replicator.run(max_seconds=90, until_caught_up=True)
    return replicator, summary


def _content(records: list[tuple]) -> list[tuple]:
    return [(key, value, tuple(headers), ts) for _p, key, value, headers, ts in records]


def _copied(target: KafkaCluster, topic: str, partition: int) -> list[tuple]:
    return [r.content() for r in read_partition(target, topic, partition)]


def _limits_answered_once_the_start_is_stored(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """The target topics' record limits answered only once the first assignment stored its partitions' start: the
    consumer is assigned by then, and the copy must still wait for the limits (a batch produced before them is one
    the target refuses). Whether each answer came after the start was stored is appended to the list returned."""
    stored, answered_after_store = threading.Event(), []
    read_limits = limits_gate.read_limits

    def held(admin: object, targets: list[str], missing: list[str] | None = None) -> dict:
        answered_after_store.append(stored.wait(20))
        return read_limits(admin, targets, missing)

    monkeypatch.setattr(limits_gate, "read_limits", held)
    for mode in (delivery.AtLeastOnce, delivery.Transactional):
        monkeypatch.setattr(mode, "store_start", _then(mode.store_start, stored.set))
    return answered_after_store


def _then(call: Callable[..., None], after: Callable[[], None]) -> Callable[..., None]:
    def both(*args: object) -> None:
        call(*args)
        after()

    return both


def test_a_record_the_target_cannot_take_stops_only_its_partition_and_says_why(kafka_pair, unique_name,
                                                                               monkeypatch):
    source, target = kafka_pair
    topic = unique_name
    create_topics(source, [NewTopic(topic, 3, 1)])
    # The target topic exists with a lower limit than the source's (the source has the broker's 1 MB).
    create_topics(target, [NewTopic(topic, 3, 1, config={"max.message.bytes": str(TARGET_LIMIT)})])
    # 400 KB of small records: fine one by one, too much for one batch; then one record exactly at the
    # limit as the broker counts it (the target takes it: the engine's count is not too high, nor too low).
    partition0 = [*_small(0, 0, 400), _exactly(0, 400, TARGET_LIMIT)]
    partition1 = [*_small(1, 0, 10), (1, b"big-value", os.urandom(150_000), [], BASE_TS + 10), *_small(1, 11, 20)]
    partition2 = [*_small(2, 0, 5), (2, os.urandom(120_000), b"v", [("h", b"x")], BASE_TS + 5), *_small(2, 6, 10)]
    produce(source, topic, partition0 + partition1 + partition2, **{"message.max.bytes": 2_000_000})
    plan = make_plan(source, target, topic, sync={"config_exclude": ["max.message.bytes"]},
                     engine={"status_interval_s": 0.5, "progress_interval_s": 0.2})

    limits_after_start = _limits_answered_once_the_start_is_stored(monkeypatch)
    replicator, summary = _run(plan, source, target)
    monkeypatch.undo()

    # The limits were read beside the assignment, not before it (the start of 10,000 partitions waited 1.3-1.5 s
    # for them); the 400 KB of partition 0 went out in batches under the limit all the same.
    assert limits_after_start and all(limits_after_start), limits_after_start
    assert set(summary.failed_partitions) == {f"{topic}[1]", f"{topic}[2]"}, summary.failed_partitions
    value_reason, key_reason = summary.failed_partitions[f"{topic}[1]"], summary.failed_partitions[f"{topic}[2]"]
    # Size as the broker counts it: a batch of this one record (61-byte batch header + the record).
    assert "offset 10" in value_reason and "150" in value_reason and str(TARGET_LIMIT) in value_reason, value_reason
    assert "offset 5" in key_reason and "120" in key_reason and str(TARGET_LIMIT) in key_reason, key_reason
    assert "max.message.bytes" in value_reason
    # Every other record was copied: all of partition 0, and each stopped partition up to its record.
    assert _copied(target, topic, 0) == _content(partition0)
    assert _copied(target, topic, 1) == _content(partition1[:10])
    assert _copied(target, topic, 2) == _content(partition2[:5])

    # The status topic says what stopped and why.
    statuses = read_worker_statuses(plan, target.client_config(), window_s=120)
    mine = [s for s in statuses if s["worker"] == replicator.worker_id]
    assert mine and mine[0]["state"] == "exited"
    failed = {p["partition"]: p["failed"] for p in mine[0]["partitions"] if p["failed"]}
    assert set(failed) == {1, 2} and "offset 10" in failed[1] and "offset 5" in failed[2]

    # A restart does not die at the same record: the partitions stay stopped with their reasons, nothing
    # else is sent again.
    _replicator, again = _run(plan, source, target)
    assert again.failed_partitions == summary.failed_partitions
    assert again.records == 0
    assert len(_copied(target, topic, 0)) == len(partition0)
    assert len(_copied(target, topic, 1)) == 10
    assert len(_copied(target, topic, 2)) == 5


def _copied_yet(target: KafkaCluster, topic: str, records: int) -> bool:
    try:
        return len(_copied(target, topic, 0)) >= records
    except KafkaException:  # the target topic is not there yet
        return False


def _limits_refused_once_for(monkeypatch: pytest.MonkeyPatch, topic: str) -> list[list[str]]:
    """The first read of `topic`'s record limits fails (a target that did not answer in time, say); the topics of
    each refused read are appended to the list returned."""
    refused: list[list[str]] = []
    read_limits = limits_gate.read_limits

    def refusing_once(admin: object, targets: list[str], missing: list[str] | None = None) -> dict:
        if topic in targets and not refused:
            refused.append(sorted(targets))
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "injected: the target did not answer in time"))
        return read_limits(admin, targets, missing)

    monkeypatch.setattr(limits_gate, "read_limits", refusing_once)
    return refused


def test_a_topic_whose_limits_could_not_be_read_is_copied_within_them_once_they_are(kafka_pair, unique_name,
                                                                                     monkeypatch):
    source, target = kafka_pair
    first, later = f"{unique_name}-first", f"{unique_name}-later"
    create_topics(source, [NewTopic(first, 1, 1)])
    produce(source, first, _small(0, 0, 5))
    # The topic a refresh will find: on the target already, empty, with a lower limit than the source's.
    create_topics(target, [NewTopic(later, 1, 1, config={"max.message.bytes": str(TARGET_LIMIT)})])
    plan = make_plan(source, target, unique_name, sync={"config_exclude": ["max.message.bytes"]},
                     engine={"refresh_interval_s": 1, "status_interval_s": 0.5, "progress_interval_s": 0.2})
    # The assignment that takes the new topic cannot read its limits the first time: its records are held and the
    # limits asked again. Copied without its limits, the large record would go to the target, which refuses it;
    # copied within them, the engine stops the partition there itself, saying why.
    refused = _limits_refused_once_for(monkeypatch, later)
    replicator = Replicator(plan, source.client_config(), target.client_config())
    ran: list = []
    runner = threading.Thread(target=lambda: ran.append(replicator.run(max_seconds=90)))
    runner.start()
    records = [*_small(0, 0, 10), (0, b"big-value", os.urandom(150_000), [], BASE_TS + 10), *_small(0, 11, 20)]
    try:
        deadline = time.monotonic() + 60
        while not _copied_yet(target, first, 5):
            assert time.monotonic() < deadline and runner.is_alive(), "the first topic was not copied"
            time.sleep(0.2)
        create_topics(source, [NewTopic(later, 1, 1)])
        produce(source, later, records, **{"message.max.bytes": 2_000_000})
        while not (state := replicator.states.get((later, 0))) or not state.failed:
            assert time.monotonic() < deadline and runner.is_alive(), "the new topic's partition did not stop"
            time.sleep(0.2)
    finally:
        replicator.stop()
        runner.join(60)
    assert refused and later in refused[0], refused
    assert ran and not replicator.fatal, replicator.fatal  # a refused batch is fatal to the producer
    reason = ran[0].failed_partitions[f"{later}[0]"]
    assert "offset 10" in reason and "max.message.bytes" in reason and str(TARGET_LIMIT) in reason, reason
    assert _copied(target, later, 0) == _content(records[:10])


def test_a_topic_is_copied_while_another_topics_limits_are_still_read(kafka_pair, unique_name, monkeypatch):
    source, target = kafka_pair
    fast, slow = f"{unique_name}-fast", f"{unique_name}-slow"
    create_topics(source, [NewTopic(fast, 2, 1), NewTopic(slow, 1, 1)])
    create_topics(target, [NewTopic(slow, 1, 1, config={"max.message.bytes": str(TARGET_LIMIT)})])
    fast_records = [*_small(0, 0, 20), *_small(1, 0, 20)]
    slow_records = [*_small(0, 0, 10), (0, b"big-value", os.urandom(150_000), [], BASE_TS + 10), *_small(0, 11, 20)]
    produce(source, fast, fast_records)
    produce(source, slow, slow_records, **{"message.max.bytes": 2_000_000})
    plan = make_plan(source, target, unique_name, sync={"config_exclude": ["max.message.bytes"]},
                     engine={"status_interval_s": 0.5, "progress_interval_s": 0.2})
    # One topic a request, and the slow topic's limits answered only when the test says so: the fast topic's
    # records must not wait for them.
    monkeypatch.setattr(limits_gate, "CONFIG_BATCH", 1)
    answer_slow, read_limits = threading.Event(), limits_gate.read_limits

    def slow_to_answer(admin: object, targets: list[str], missing: list[str] | None = None) -> dict:
        if slow in targets:
            answer_slow.wait(60)
        return read_limits(admin, targets, missing)

    monkeypatch.setattr(limits_gate, "read_limits", slow_to_answer)
    replicator = Replicator(plan, source.client_config(), target.client_config())
    ran: list = []
    runner = threading.Thread(target=lambda: ran.append(replicator.run(max_seconds=90)))
    runner.start()
    try:
        deadline = time.monotonic() + 60
        while not (_copied_yet(target, fast, 20) and len(_copied(target, fast, 1)) == 20):
            assert time.monotonic() < deadline and runner.is_alive(), "the fast topic waited for the slow one's limits"
            time.sleep(0.2)
        assert _copied(target, slow, 0) == []  # held: its limits are not known yet
        answer_slow.set()
        while not (state := replicator.states.get((slow, 0))) or not state.failed:
            assert time.monotonic() < deadline and runner.is_alive(), "the slow topic's partition did not stop"
            time.sleep(0.2)
    finally:
        answer_slow.set()
        replicator.stop()
        runner.join(60)
    assert ran and not replicator.fatal, replicator.fatal
    # The held records were copied within the limits learned: the partition stopped at the record too large.
    reason = ran[0].failed_partitions[f"{slow}[0]"]
    assert "offset 10" in reason and str(TARGET_LIMIT) in reason, reason
    assert _copied(target, slow, 0) == _content(slow_records[:10])
    assert _copied(target, fast, 0) + _copied(target, fast, 1) == _content(fast_records)
