"""Crash safety: the engine killed with SIGKILL at random points of a copy, then restarted, leaves every source
record on the target exactly once and in order (at-least-once mode, no transactions), its offsets exactly
translatable."""

from __future__ import annotations

import logging
import os
import random
import signal
import subprocess
import sys
import time

import pytest
import yaml
from confluent_kafka.admin import NewTopic

from mirror_engine.flow_mapping import FlowMapping
from mirror_engine.plan import plan_from_dict
from tests.integration.kafka_data import end_offsets, produce_transactions, read_partition
from tests.integration.plans import create_topics, plan_dict

pytestmark = pytest.mark.integration

PARTITIONS = 8
PER_TRANSACTION = 50_000
TRANSACTIONS = 24  # every 6th aborted: 20 committed, 1,000,000 records, with offset holes (markers, aborts)
RECORDS = (TRANSACTIONS - TRANSACTIONS // 6) * PER_TRANSACTION
KILLS = 5


def _copied(target, topic: str) -> int:
    return sum(end_offsets(target, topic, PARTITIONS))


def test_kill_9_five_times_leaves_each_record_once_in_order(kafka_pair, unique_name, tmp_path):
    source, target = kafka_pair
    topic = f"{unique_name}-crash"
    create_topics(source, [NewTopic(topic, PARTITIONS, 1)])
    produce_transactions(source, topic, PARTITIONS, TRANSACTIONS, PER_TRANSACTION, abort_every=6,
                         transactional_id=f"{unique_name}-writer")
    data = plan_dict(source, target, topic)
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(data))

    rng = random.Random(16)
    logs = []
    for run in range(KILLS):
        # Kill at a random point of the copy: once the target grew by 3-15% of the data set since the last kill.
        threshold = _copied(target, topic) + int(rng.uniform(0.03, 0.15) * RECORDS)
        log_file = tmp_path / f"run-{run}.log"
        logs.append(log_file)
        with log_file.open("w") as log:
            engine = subprocess.Popen([sys.executable, "-m", "mirror_engine.cli", "run", "--plan", str(plan_file)],
                                      stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while _copied(target, topic) < threshold and engine.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert engine.poll() is None, f"the engine exited on its own:\n{log_file.read_text()[-3000:]}"
        time.sleep(rng.uniform(0, 0.5))
        os.kill(engine.pid, signal.SIGKILL)
        engine.wait()
    assert _copied(target, topic) < RECORDS, "the kills came too late to land mid-copy"
    final = subprocess.run(
        [sys.executable, "-m", "mirror_engine.cli", "run", "--plan", str(plan_file), "--until-caught-up",
         "--max-seconds", "300"], capture_output=True, text=True, timeout=400)
    assert final.returncode == 0, final.stderr[-3000:]

    # What the restarts found on the target past the stored progress, and counted as copied.
    restarts = [log.read_text() for log in logs[1:]] + [final.stderr]
    assert sum("counted as copied" in text for text in restarts) >= 3, restarts[-1][-3000:]
    assert not any("copying on from the stored progress" in text for text in restarts)

    with FlowMapping(plan_from_dict(data), target.client_config()) as mapping:
        mapping.refresh()
        total = 0
        for partition in range(PARTITIONS):
            expected = read_partition(source, topic, partition)
            copied = read_partition(target, topic, partition)
            assert [r.content() for r in copied] == [r.content() for r in expected], \
                f"partition {partition}: {len(copied)} records on the target for {len(expected)} on the source"
            # Every committed source offset translates to its own record's target offset, through the
            # offset-syncs the runs wrote (including those for the tails the restarts counted as copied).
            wrong = [(s.offset, t.offset, mapping.translate(topic, partition, s.offset))
                     for s, t in zip(expected, copied, strict=True)
                     if mapping.translate(topic, partition, s.offset) != t.offset]
            assert not wrong, f"partition {partition}: {len(wrong)} offsets mistranslated, e.g. {wrong[:3]}"
            total += len(copied)
    assert total == RECORDS


def test_a_foreign_tail_on_the_target_is_not_counted_and_is_said(kafka_pair, unique_name, caplog):
    """Records another producer wrote into a target partition are not the source's: the engine copies on from its
    stored progress, names the partition in a warning and counts it in the status."""
    from confluent_kafka import Producer

    from mirror_engine.engine import Replicator

    source, target = kafka_pair
    create_topics(source, [NewTopic(unique_name, 1, 1)])
    now = int(time.time() * 1000)
    _produce(source, unique_name, range(100), now)
    data = plan_dict(source, target, unique_name)
    plan = plan_from_dict(data)
    assert Replicator(plan, source.client_config(), target.client_config()).run(max_seconds=60,
                                                                                until_caught_up=True).ok
    foreign = Producer(target.client_config())
    for i in range(3):
        foreign.produce(unique_name, b"foreign-%d" % i, partition=0)
    assert foreign.flush(15) == 0
    _produce(source, unique_name, range(100, 150), now)

    caplog.set_level(logging.INFO, logger="mirror_engine")
    again = Replicator(plan, source.client_config(), target.client_config())
    assert again.run(max_seconds=60, until_caught_up=True).ok
    warnings = [r.getMessage() for r in caplog.records if "copying on from the stored progress" in r.getMessage()]
    assert len(warnings) == 1 and f"{unique_name}[0]" in warnings[0], warnings
    status = again.build_status(exiting=True)
    assert status["reconcile_fallbacks"] == 1 and status["partitions"][0]["reconcile_fallback"]

    values = [r.value for r in read_partition(target, unique_name, 0)]
    assert values == [b"v%d" % i for i in range(100)] + [b"foreign-%d" % i for i in range(3)] + \
        [b"v%d" % i for i in range(100, 150)]
    with FlowMapping(plan, target.client_config()) as mapping:
        mapping.refresh()
        assert mapping.translate(unique_name, 0, 99) == 99
        assert mapping.translate(unique_name, 0, 100) == 103
        assert mapping.translate(unique_name, 0, 149) == 152


def _produce(cluster, topic: str, numbers: range, now: int) -> None:
    from tests.integration.kafka_data import produce

    produce(cluster, topic, [(0, b"k%d" % i, b"v%d" % i, [("i", b"%d" % i)], now + i) for i in numbers])
