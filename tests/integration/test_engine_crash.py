"""Crash safety: the engine killed with SIGKILL at random points of a copy, then restarted, leaves every source
record on the target exactly once and in order, its offsets exactly translatable: in at-least-once mode (the
restart reconciles the target's tail past the stored progress) and in exactly-once mode (the restart fences the
killed run's open transaction at once and goes on after the last committed one), from a YAML plan and from a
MirrorMaker 2 file."""

from __future__ import annotations

import logging
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from mirror_engine.flow import FlowMapping, InternalTopics, load_progress
from mirror_engine.mm2 import import_mm2_properties
from mirror_engine.plan import MigrationPlan, plan_from_dict
from tests.integration.kafka_data import end_offsets, produce_transactions, read_partition
from tests.integration.plans import create_topics, plan_dict

pytestmark = pytest.mark.integration

PARTITIONS = 8
PER_TRANSACTION = 50_000
TRANSACTIONS = 24  # every 6th aborted: 20 committed, 1,000,000 records, with offset holes (markers, aborts)
RECORDS = (TRANSACTIONS - TRANSACTIONS // 6) * PER_TRANSACTION
KILLS = 5
# Added to the source before the run killed after a commit when the runs before it copied more than a fifth of it
# (a fast machine): that run's first commit must not take the copy to its end.
TOP_UP = 6


@dataclass
class CrashRun:
    """How one mode is launched: the engine's command line and the plan it runs."""

    args: list[str]
    plan: MigrationPlan
    exactly_once: bool


def _plan_run(source, target, topic: str, tmp_path: Path, exactly_once: bool) -> CrashRun:
    # Progress stored (and transactions committed) four times a second: the kills after a commit land early in
    # the copy, with most of it ahead, even on a fast machine.
    data = plan_dict(source, target, topic, engine={"exactly_once": exactly_once, "progress_interval_s": 0.25})
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(data))
    return CrashRun(["--plan", str(plan_file)], plan_from_dict(data), exactly_once)


def _mm2_run(source, target, topic: str, tmp_path: Path) -> CrashRun:
    """MirrorMaker 2's way to ask for exactly-once: the target worker's exactly.once.source.support."""
    text = (f"clusters = src, tgt\nsrc.bootstrap.servers = {source.bootstrap}\n"
            f"tgt.bootstrap.servers = {target.bootstrap}\nsrc->tgt.enabled = true\n"
            f"src->tgt.topics = {re.escape(topic)}\n"
            "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n"
            "replication.factor = 1\ntgt.exactly.once.source.support = enabled\n")
    mm2_file = tmp_path / "mm2.properties"
    mm2_file.write_text(text)
    plan = import_mm2_properties(text, str(mm2_file)).plan
    assert plan.engine.exactly_once
    return CrashRun(["--mm2-config", str(mm2_file)], plan, True)


def _written(target, topic: str) -> int:
    """Records written to the target topic, committed, open and aborted (end offsets)."""
    return sum(end_offsets(target, topic, PARTITIONS))


def _copied(target, topic: str) -> int:
    """What read_committed readers of the target topic see (the last stable offsets)."""
    return sum(end_offsets(target, topic, PARTITIONS, committed=True))


def _visible(target, topic: str) -> int:
    """Records a read_committed reader of the target topic sees: the copy's own count, without the offsets its
    commit markers and the killed runs' aborted transactions take (those make the offsets outrun the records)."""
    return sum(len(read_partition(target, topic, partition)) for partition in range(PARTITIONS))


def _remaining(source, target, topic: str, plan: MigrationPlan) -> int:
    """Source offsets past the flow's stored progress: what the copy has ahead."""
    stored = load_progress(target.client_config(), InternalTopics.for_plan(plan).progress)
    return sum(end - (stored[(topic, partition)].position if (topic, partition) in stored else 0)
               for partition, end in enumerate(end_offsets(source, topic, PARTITIONS)))


def _target_has(admin: AdminClient, topic: str) -> bool:
    return topic in admin.list_topics(timeout=5).topics


@pytest.mark.parametrize("mode", ["at-least-once", "exactly-once", "exactly-once-mm2"])
def test_kill_9_five_times_leaves_each_record_once_in_order(kafka_pair, unique_name, tmp_path, mode):
    source, target = kafka_pair
    topic = f"{unique_name}-crash"
    create_topics(source, [NewTopic(topic, PARTITIONS, 1)])
    records = produce_transactions(source, topic, PARTITIONS, TRANSACTIONS, PER_TRANSACTION, abort_every=6,
                                   transactional_id=f"{unique_name}-writer")
    transactions = TRANSACTIONS
    run = _mm2_run(source, target, topic, tmp_path) if mode == "exactly-once-mm2" else \
        _plan_run(source, target, topic, tmp_path, exactly_once=mode == "exactly-once")
    command = [sys.executable, "-m", "mirror_engine.cli", "run", *run.args]
    target_admin = AdminClient(target.client_config())

    rng = random.Random(16)
    logs = []
    for kill in range(KILLS):
        while kill == 3 and _remaining(source, target, topic, run.plan) < 0.8 * sum(end_offsets(source, topic,
                                                                                                 PARTITIONS)):
            records += produce_transactions(source, topic, PARTITIONS, TOP_UP, PER_TRANSACTION, abort_every=6,
                                            transactional_id=f"{unique_name}-writer", first=transactions)
            transactions += TOP_UP
        log_file = tmp_path / f"run-{kill}.log"
        logs.append(log_file)
        with log_file.open("w") as log:
            engine = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        if kill == 0:
            # While the engine creates the target topic itself: as soon as the topic shows on the target.
            while not _target_has(target_admin, topic) and engine.poll() is None and time.monotonic() < deadline:
                time.sleep(0.005)
        elif kill == 1:
            # Before the first commit (exactly-once) or the first stored progress: at the first records written.
            start = _written(target, topic)
            while _written(target, topic) == start and engine.poll() is None and time.monotonic() < deadline:
                time.sleep(0.005)
        elif kill == 2:
            time.sleep(rng.uniform(0.3, 1.0))  # within the first second of a restart
        elif kill == 3:
            # At a random point of the copy: once the target's committed records grew by 3-15% of the data set
            # (after one of the run's commits, with the next transaction open in exactly-once mode).
            threshold = _copied(target, topic) + int(rng.uniform(0.03, 0.15) * RECORDS)
            while _copied(target, topic) < threshold and engine.poll() is None and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(rng.uniform(0, 0.2))
        else:
            # Within the restart's first moments of copying, its first records written, around its first commit.
            start = _written(target, topic)
            while _written(target, topic) == start and engine.poll() is None and time.monotonic() < deadline:
                time.sleep(0.005)
            time.sleep(rng.uniform(0, 0.3))
        assert engine.poll() is None, f"the engine exited on its own:\n{log_file.read_text()[-3000:]}"
        os.kill(engine.pid, signal.SIGKILL)
        engine.wait()
    assert _visible(target, topic) < records, "the kills came too late to land mid-copy"
    final = subprocess.run([*command, "--until-caught-up", "--max-seconds", "300"],
                           capture_output=True, text=True, timeout=400)
    assert final.returncode == 0, final.stderr[-3000:]

    restarts = [log.read_text() for log in logs[1:]] + [final.stderr]
    delivery = "exactly-once, one transaction per" if run.exactly_once else "at-least-once"
    # Said at start, before the first record (an early kill can land before it).
    assert all(f"delivery: {delivery}" in text for text in restarts if "copying" in text), restarts[-1][-3000:]
    assert f"delivery: {delivery}" in final.stderr
    if not run.exactly_once:
        # What the restarts found on the target past the stored progress, and counted as copied.
        assert sum("counted as copied" in text for text in restarts) >= 3, restarts[-1][-3000:]
    assert not any("copying on from the stored progress" in text for text in restarts)
    if run.exactly_once:
        # The last run's commit left no transaction open: read_committed readers see up to the log's end
        # (a killed run's transaction still open would hold them back until its timeout).
        _assert_no_open_transaction(target, topic)

    with FlowMapping(run.plan, target.client_config()) as mapping:
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
    assert total == records


def test_an_exactly_once_run_left_between_commits_is_continued_from_its_last_commit_exactly(
        kafka_pair, unique_name, monkeypatch):
    """What a kill leaves in exactly-once mode, made on purpose: the last committed transaction, the open one aborted
    by the next run's fence. With room for 500 records in the producer's queue, offset-syncs are held back at nearly
    every commit; the progress each commit stores must still reach every record it commits, or the next run, which
    goes on from the progress, copies the records past it twice."""
    from mirror_engine.replication import Replicator
    from mirror_engine.replication.testing import Transactional, copy_contract

    source, target = kafka_pair
    topic = f"{unique_name}-left"
    partitions, total = 4, 48 * 2_000 - 8 * 2_000  # every 6th of 48 transactions aborted
    create_topics(source, [NewTopic(topic, partitions, 1)])
    produce_transactions(source, topic, partitions, 48, 2_000, abort_every=6, transactional_id=f"{unique_name}-w")
    plan = plan_from_dict(plan_dict(source, target, topic,
                                    engine={"exactly_once": True, "progress_interval_s": 0.2}))
    with monkeypatch.context() as patched:
        patched.setattr(copy_contract, "QUEUE_MAX_MESSAGES", 500)
        patched.setattr(Transactional, "shutdown",
                        lambda self: self.faults.fatal or self.clients.producer.abort_transaction(10))
        left = Replicator(plan, source.client_config(), target.client_config())
        outcome: list[object] = []

        def run_left() -> None:
            try:
                outcome.append(left.run(max_seconds=120))
            except Exception:  # said by the assertion below
                outcome.append(traceback.format_exc())

        runner = threading.Thread(target=run_left)
        runner.start()
        deadline = time.monotonic() + 60
        # Left after a few commits, the copy under way.
        while sum(end_offsets(target, topic, partitions, committed=True)) < total // 10 and runner.is_alive() \
                and time.monotonic() < deadline:
            time.sleep(0.01)
        left.stop()
        runner.join(60)
    assert not runner.is_alive() and not isinstance(outcome[0], str), outcome[0]
    committed = _visible_in(target, topic, partitions)
    assert 0 < committed < total, f"{committed} of {total} records committed when the run was left"

    summary = Replicator(plan, source.client_config(), target.client_config()).run(max_seconds=120,
                                                                                   until_caught_up=True)
    assert summary.ok, summary.failed_partitions
    for partition in range(partitions):
        expected = [r.content() for r in read_partition(source, topic, partition)]
        copied = [r.content() for r in read_partition(target, topic, partition)]
        assert copied == expected, f"partition {partition}: {len(copied)} records on the target for {len(expected)}"


def _visible_in(target, topic: str, partitions: int) -> int:
    """Records read_committed readers see in the target topic (0 before the engine created it)."""
    if not _target_has(AdminClient(target.client_config()), topic):
        return 0
    return sum(len(read_partition(target, topic, partition)) for partition in range(partitions))


def _assert_no_open_transaction(target, topic: str) -> None:
    """The last stable offset of every partition is its end: no transaction of the engine is left open."""
    committed = Consumer({**target.client_config(), "group.id": "test-lso", "isolation.level": "read_committed"})
    uncommitted = Consumer({**target.client_config(), "group.id": "test-lso"})
    try:
        for partition in range(PARTITIONS):
            tp = TopicPartition(topic, partition)
            stable = committed.get_watermark_offsets(tp, timeout=10)[1]
            end = uncommitted.get_watermark_offsets(tp, timeout=10)[1]
            assert stable == end, f"partition {partition}: a transaction is open from {stable} to {end}"
    finally:
        committed.close()
        uncommitted.close()


def test_a_foreign_tail_on_the_target_is_not_counted_and_is_said(kafka_pair, unique_name, caplog):
    """Records another producer wrote into a target partition are not the source's: the engine copies on from its
    stored progress, names the partition in a warning and counts it in the status."""
    from confluent_kafka import Producer

    from mirror_engine.replication import Replicator

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


def test_a_second_exactly_once_run_fences_the_first_which_says_so(kafka_pair, unique_name, tmp_path):
    """Two `run`s of one exactly-once flow share its transactional id: the second fences the first, which ends with
    a sentence saying why, and the copy stays exact."""
    from tests.integration.kafka_data import produce

    source, target = kafka_pair
    topic = f"{unique_name}-twice"
    create_topics(source, [NewTopic(topic, 2, 1)])
    now = int(time.time() * 1000)
    produce(source, topic, [(i % 2, b"k%d" % i, b"v%d" % i, [], now + i) for i in range(200_000)])
    run = _plan_run(source, target, topic, tmp_path, exactly_once=True)
    command = [sys.executable, "-m", "mirror_engine.cli", "run", *run.args]
    first_log = tmp_path / "first.log"
    with first_log.open("w") as log:
        first = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    # The topic's two partitions (`_copied` asks PARTITIONS, which this topic does not have: it saw nothing, and
    # the second run started only at the deadline, 120 s on, after the first had copied everything).
    while sum(end_offsets(target, topic, 2, committed=True)) == 0 and first.poll() is None \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    assert first.poll() is None and time.monotonic() < deadline, "the first run copied nothing"
    second = subprocess.Popen([*command, "--until-caught-up", "--max-seconds", "300"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        assert first.wait(timeout=120) != 0
        assert "fenced this one" in first_log.read_text(), first_log.read_text()[-3000:]
        _out, errors = second.communicate(timeout=400)
        assert second.returncode == 0, errors[-3000:]
    finally:
        for process in (first, second):
            if process.poll() is None:
                process.kill()
    for partition in range(2):
        expected = [r.content() for r in read_partition(source, topic, partition)]
        assert [r.content() for r in read_partition(target, topic, partition)] == expected
