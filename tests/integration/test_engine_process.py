"""The engine as a process: SIGTERM stops it cleanly, it logs per-partition progress, heartbeats show its latency."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time
import traceback
from typing import ClassVar

import pytest
import yaml
from confluent_kafka import Consumer
from confluent_kafka.admin import NewTopic

from mirror_engine.flow import InternalTopics, load_progress
from mirror_engine.mm2 import Heartbeat
from mirror_engine.observe import LatencyError, last_heartbeat, measure_latency
from mirror_engine.plan import plan_from_dict
from mirror_engine.replication import Replicator
from tests.integration.kafka_data import end_offsets, produce, read_partition
from tests.integration.plans import create_topics, make_plan, plan_dict

pytestmark = pytest.mark.integration

RECORDS = 300_000
PARTITIONS = 4


def test_sigterm_stops_cleanly_and_a_restart_copies_nothing_twice(kafka_pair, unique_name, tmp_path):
    source, target = kafka_pair
    topic = f"{unique_name}-term"
    create_topics(source, [NewTopic(topic, PARTITIONS, 1)])
    now = int(time.time() * 1000)
    produce(source, topic, [(i % PARTITIONS, f"k{i}".encode(), f"record-{i}".encode() * 8, None, now + i)
                            for i in range(RECORDS)], **{"linger.ms": 50})
    data = plan_dict(source, target, topic, engine={"log_interval_s": 0.3, "batch_size": 500})
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(data))
    log_file = tmp_path / "engine.log"

    with log_file.open("w") as log:
        engine = subprocess.Popen([sys.executable, "-m", "mirror_engine.cli", "run", "--plan", str(plan_file)],
                                  stdout=subprocess.PIPE, stderr=log, text=True)
        # Stop it as soon as its progress line says it copied records: mid-copy. (The log's summary line comes
        # every interval; per-partition lines only for the few partitions furthest behind.)
        progress_line = re.compile(r"copied [1-9]\d* records in")
        deadline = time.monotonic() + 120
        while not progress_line.search(log_file.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        engine.send_signal(signal.SIGTERM)
        stdout, _ = engine.communicate(timeout=90)
    stderr = log_file.read_text()
    assert engine.returncode == 0, stderr[-3000:]
    assert progress_line.search(stderr), "no progress line in the log"
    assert "signal 15: stopping" in stderr

    # A clean stop stores the progress of every record the target holds: the restart re-sends nothing.
    stopped_at = json.loads(stdout.strip().splitlines()[-1])["records"]
    progress = load_progress(target.client_config(), InternalTopics.for_plan(plan_from_dict(data)).progress)
    target_ends = end_offsets(target, topic, PARTITIONS)
    assert [progress[(topic, p)].position for p in range(PARTITIONS)] == target_ends
    assert 0 < sum(target_ends) == stopped_at < RECORDS, "stop the engine mid-copy: make the data set larger"

    rerun = subprocess.run([sys.executable, "-m", "mirror_engine.cli", "run", "--plan", str(plan_file),
                            "--until-caught-up", "--max-seconds", "300"], capture_output=True, text=True, timeout=400)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    for partition in range(PARTITIONS):
        expected = [r.content() for r in read_partition(source, topic, partition)]
        assert [r.content() for r in read_partition(target, topic, partition)] == expected


def _run_until_a_beat_arrives(plan, source, target):
    """Run a flow until a heartbeat it wrote to the source reached the target; its latency, with the flow stopped."""
    replicator = Replicator(plan, source.client_config(), target.client_config())
    runner = threading.Thread(target=replicator.run, kwargs={"max_seconds": 120})
    runner.start()
    try:
        try:
            latency = measure_latency(plan, source.client_config(), target.client_config(), timeout_s=60)
        except LatencyError as error:
            # Where the engine was meanwhile (once, in a CI run, it had logged nothing after its start's first
            # line in 60 s): its thread's stack, with the error.
            frame = sys._current_frames().get(runner.ident or 0)
            stack = "".join(traceback.format_stack(frame)) if frame is not None else "(the engine's thread ended)"
            pytest.fail(f"{error}\nthe engine's thread:\n{stack}")
        beat = last_heartbeat(target.client_config(), plan)
        assert beat is not None and (beat.source_alias, beat.target_alias) == ("src", "tgt")
        assert time.time() * 1000 - beat.timestamp_ms < 5_000, "the running engine's last heartbeat is stale"
        return latency
    finally:
        replicator.stop()
        runner.join(60)


def test_heartbeats_show_the_flow_alive_and_its_latency(kafka_pair, unique_name):
    source, target = kafka_pair
    engine = {"replicate_heartbeats": True, "refresh_interval_s": 1, "heartbeat_interval_s": 0.5}
    # An earlier flow from the same source alias (another plan, so progress of its own) filled the heartbeats
    # replica first: every flow from `src` copies the source's `heartbeats` into `src.heartbeats`.
    create_topics(source, [NewTopic(f"{unique_name}-early", 1, 1), NewTopic(f"{unique_name}-beat", 1, 1)])
    earlier = make_plan(source, target, f"{unique_name}-early", name="earlier", engine=engine)
    _run_until_a_beat_arrives(earlier, source, target)
    copied_before = len(read_partition(target, "src.heartbeats", 0))
    # A beat written while no flow runs (by an MM2 flow into `src`, say): the next flow copies it.
    between = Heartbeat("tgt", "src", int(time.time() * 1000) + 1)
    produce(source, "heartbeats", [(0, between.record_key(), between.record_value(), None, between.timestamp_ms)])

    latency = _run_until_a_beat_arrives(make_plan(source, target, f"{unique_name}-beat", engine=engine),
                                        source, target)
    assert latency.replica_topic == "src.heartbeats"
    assert 0 < latency.latency_ms < 60_000
    # Each heartbeat written to the source arrived in the replica as it was (same key, value and timestamp), once:
    # the second flow went on after the beats the first had copied, and copied every beat since, the one written
    # between the flows first.
    source_beats = [r.content() for r in read_partition(source, "heartbeats", 0)]
    replica_beats = [r.content() for r in read_partition(target, "src.heartbeats", 0)]
    assert 0 < copied_before < len(replica_beats)
    assert len(set(replica_beats)) == len(replica_beats), "a heartbeat was copied twice"
    at = iter(source_beats)
    assert all(beat in at for beat in replica_beats), "the replica's beats are not the source's, in its order"
    assert replica_beats[copied_before][:2] == (between.record_key(), between.record_value())
    since = [b for b in source_beats if between.timestamp_ms <= b[3] <= replica_beats[-1][3]]
    assert len(since) > 1 and set(since) <= set(replica_beats)


def test_latency_needs_heartbeats_copied(kafka_pair, unique_name):
    source, target = kafka_pair
    plan = make_plan(source, target, f"{unique_name}-none")
    with pytest.raises(LatencyError, match=r"engine\.replicate_heartbeats"):
        measure_latency(plan, source.client_config(), target.client_config(), timeout_s=5)


class _PauseCountingConsumer(Consumer):
    """The copy's consumer, counting the partitions asked to pause or resume (`paused`)."""

    paused: ClassVar[list[int]] = []

    def pause(self, partitions: list) -> None:
        self.paused.append(len(partitions))
        super().pause(partitions)

    def resume(self, partitions: list) -> None:
        self.paused.append(len(partitions))
        super().resume(partitions)


def test_pause_resume_and_stop_through_the_control_topic(kafka_pair, unique_name, monkeypatch):
    from mirror_engine.flow import ControlChannel
    from mirror_engine.replication.testing import clients

    source, target = kafka_pair
    topic = f"{unique_name}-pause"
    create_topics(source, [NewTopic(topic, 2, 1)])
    produce(source, topic, [(i % 2, b"k", f"a{i}".encode(), None, int(time.time() * 1000)) for i in range(100)])
    plan = make_plan(source, target, topic, name=unique_name)  # its flow is left stopped: a plan of its own
    # A paused flow stops consuming, and a stopped one gives its partitions up: neither pauses nor resumes them one
    # by one in the consumer (librdkafka's pause and resume held the whole engine about 4 s each way at 10,000
    # partitions over 1,000 topics, GIL and all). Only partitions the engine paused itself are resumed.
    monkeypatch.setattr(clients, "Consumer", _PauseCountingConsumer)
    _PauseCountingConsumer.paused = []
    replicator = Replicator(plan, source.client_config(), target.client_config())
    runner = threading.Thread(target=replicator.run, kwargs={"max_seconds": 120}, daemon=True)
    runner.start()

    def copied() -> int:
        try:
            return sum(len(read_partition(target, topic, p)) for p in range(2))
        except Exception:  # the target topic is not there yet
            return 0

    def wait_for(count: int) -> None:
        deadline = time.monotonic() + 60
        while copied() < count:
            assert time.monotonic() < deadline, f"only {copied()} of {count} records copied"
            time.sleep(0.3)

    control = ControlChannel(plan, target.client_config())
    try:
        wait_for(100)
        control.set_flow_state("paused")
        time.sleep(3)  # engines pick the change up within a second
        produce(source, topic, [(i % 2, b"k", f"b{i}".encode(), None, int(time.time() * 1000)) for i in range(100)])
        time.sleep(4)
        assert copied() == 100, "a paused flow went on copying"
        control.set_flow_state("running")
        wait_for(200)
        control.set_flow_state("stopped")
        deadline = time.monotonic() + 30
        while replicator.states:
            assert time.monotonic() < deadline, "the stopped flow kept its partitions"
            time.sleep(0.3)
    finally:
        replicator.stop()
        runner.join(60)
    assert _PauseCountingConsumer.paused == [], _PauseCountingConsumer.paused
    for partition in range(2):
        assert [r.content() for r in read_partition(target, topic, partition)] == \
            [r.content() for r in read_partition(source, topic, partition)]
