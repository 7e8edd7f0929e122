"""Spark backfill on real clusters: history copied in order beside the engine's live copy; a killed run resumes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest
import yaml
from confluent_kafka.admin import NewTopic

from mirror_engine.flow import ControlChannel, FlowMapping
from mirror_engine.plan import plan_from_dict
from mirror_engine.replication import Replicator
from spark_jobs import backfill
from tests.integration.kafka_data import end_offsets, produce, produce_transactions, read_partition
from tests.integration.plans import create_topics, plan_dict

pytestmark = [pytest.mark.integration, pytest.mark.spark]

NOW = int(time.time() * 1000) - 3_600_000
PARTITIONS = 4


def _history(count: int, tag: str) -> list[tuple]:
    return [(i % PARTITIONS, f"k{i % 97}".encode(), f"{tag}-{i}".encode(),
             [("seq", str(i).encode()), ("empty", None)] if i % 2 else None, NOW + i) for i in range(count)]


def _wait_for_snapshot(data: dict, target, topic: str, timeout_s: float = 60):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        control = ControlChannel(plan_from_dict(data), target.client_config())
        control.load()
        if topic in control.backfills:
            return control.backfills[topic]
        time.sleep(0.5)
    raise AssertionError(f"the engine recorded no backfill snapshot for {topic}")


def _target_count(target, topic: str) -> int:
    return sum(end_offsets(target, topic, PARTITIONS))


def _assert_exact_copy(source, target, topic: str) -> None:
    for partition in range(PARTITIONS):
        expected = [r.content() for r in read_partition(source, topic, partition)]
        copied = [r.content() for r in read_partition(target, topic, partition)]
        assert len(copied) == len(expected), f"{topic}[{partition}]: {len(copied)} records, source has {len(expected)}"
        assert copied == expected, f"{topic}[{partition}]: records differ or are out of order"


def test_backfill_of_history_while_the_engine_copies_new_records(kafka_pair, spark, unique_name, tmp_path):
    source, target = kafka_pair
    topic = f"{unique_name}-history"
    create_topics(source, [NewTopic(topic, PARTITIONS, 1)])
    produce(source, topic, _history(100_000, "old"), **{"linger.ms": 50})
    data = plan_dict(source, target, topic, backfill={"topics": [topic]}, engine={"refresh_interval_s": 1})
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(data))

    replicator = Replicator(plan_from_dict(data), source.client_config(), target.client_config())
    runner = threading.Thread(target=replicator.run, kwargs={"max_seconds": 400}, daemon=True)
    runner.start()
    try:
        snapshot = _wait_for_snapshot(data, target, topic)
        assert sum(b for b, _ in snapshot.partitions.values()) == 100_000
        produce(source, topic, _history(3_000, "new"))  # written after the snapshot: the engine's share
        time.sleep(2)
        assert _target_count(target, topic) == 0, "the engine copied a held partition before the backfill"

        assert backfill.main(["--plan", str(plan_file)]) == 0

        deadline = time.monotonic() + 120
        while _target_count(target, topic) < 103_000:
            assert time.monotonic() < deadline, "the engine did not copy on after the backfill"
            time.sleep(0.5)
    finally:
        replicator.stop()
        runner.join(60)
    _assert_exact_copy(source, target, topic)


def test_a_killed_backfill_rerun_copies_each_record_once(kafka_pair, spark, unique_name, tmp_path):
    source, target = kafka_pair
    topic = f"{unique_name}-killed"
    records = 300_000
    create_topics(source, [NewTopic(topic, PARTITIONS, 1)])
    produce(source, topic, _history(records, "old"), **{"linger.ms": 50})
    data = plan_dict(source, target, topic, backfill={"topics": [topic]})
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(data))
    assert Replicator(plan_from_dict(data), source.client_config(), target.client_config()).run(max_seconds=5).ok
    _wait_for_snapshot(data, target, topic)

    job = subprocess.Popen([sys.executable, "-m", "spark_jobs.backfill", "--plan", str(plan_file)],
                           stdout=subprocess.DEVNULL, stderr=(tmp_path / "job.log").open("w"), start_new_session=True)
    deadline = time.monotonic() + 300
    while _target_count(target, topic) < records // 10:
        assert time.monotonic() < deadline and job.poll() is None, \
            "the backfill ended before it could be killed: " + (tmp_path / "job.log").read_text()[-2000:]
        time.sleep(0.05)
    os.killpg(job.pid, signal.SIGKILL)
    job.wait()
    copied_when_killed = _target_count(target, topic)
    assert copied_when_killed < records, "the backfill finished before the kill: make the data set larger"

    rerun = subprocess.run([sys.executable, "-m", "spark_jobs.backfill", "--plan", str(plan_file)],
                           capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert "backfilled" in rerun.stdout
    assert Replicator(plan_from_dict(data), source.client_config(), target.client_config()).run(
        max_seconds=60, until_caught_up=True).ok
    _assert_exact_copy(source, target, topic)


def test_a_transactional_history_is_backfilled_without_aborted_records_and_translates_across_its_gaps(
        kafka_pair, spark, unique_name, tmp_path):
    """The tasks read the source as the engine does (read_committed): aborted records are not copied, and the
    offsets their transactions and markers take are gaps where (target - source) changes, each with an offset-sync,
    so that every copied record's source offset translates to the exact target offset where it is."""
    source, target = kafka_pair
    topic = f"{unique_name}-txn"
    create_topics(source, [NewTopic(topic, PARTITIONS, 1)])
    committed = produce_transactions(source, topic, PARTITIONS, transactions=30, per_transaction=200, abort_every=3,
                                     transactional_id=f"{unique_name}-writer")
    aborted = sum(len(read_partition(source, topic, p, committed=False)) for p in range(PARTITIONS)) - committed
    assert committed == 4_000 and aborted == 2_000
    data = plan_dict(source, target, topic, backfill={"topics": [topic]})
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(data))
    assert Replicator(plan_from_dict(data), source.client_config(), target.client_config()).run(max_seconds=5).ok
    _wait_for_snapshot(data, target, topic)

    assert backfill.main(["--plan", str(plan_file)]) == 0

    assert _target_count(target, topic) == committed
    _assert_exact_copy(source, target, topic)
    with FlowMapping(plan_from_dict(data), target.client_config()) as mapping:
        mapping.refresh()
        for partition in range(PARTITIONS):
            pairs = zip(read_partition(source, topic, partition), read_partition(target, topic, partition), strict=True)
            wrong = [(s.offset, t.offset, mapping.translate(topic, partition, s.offset)) for s, t in pairs
                     if mapping.translate(topic, partition, s.offset) != t.offset]
            assert not wrong, f"{topic}[{partition}]: (source, target, translated) {wrong[:5]}"


def test_backfill_refuses_a_topic_with_nothing_pending(kafka_pair, unique_name, tmp_path):
    source, target = kafka_pair
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(plan_dict(source, target, f"{unique_name}-x")))
    assert backfill.main(["--plan", str(plan_file), "--topics", f"{unique_name}-x", "--wait-seconds", "1"]) == 2
    assert backfill.main(["--plan", str(plan_file), "--from", "yesterday", "--wait-seconds", "1"]) == 2
