"""Crash safety: the engine killed with SIGKILL at random points loses nothing when restarted."""

from __future__ import annotations

import collections
import itertools
import os
import random
import signal
import subprocess
import sys
import time

import pytest
import yaml
from confluent_kafka.admin import NewTopic

from tests.integration.kafka_data import end_offsets, produce, read_partition
from tests.integration.plans import create_topics, plan_dict

pytestmark = pytest.mark.integration

RECORDS = 200_000
PARTITIONS = 4


def _start_engine(plan_file) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "mirror_engine.cli", "run", "--plan", str(plan_file)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )


def _copied(target, topic: str) -> int:
    return sum(end_offsets(target, topic, PARTITIONS))


def test_kill_9_at_random_points_loses_no_record(kafka_pair, unique_name, tmp_path):
    source, target = kafka_pair
    topic = f"{unique_name}-crash"
    create_topics(source, [NewTopic(topic, PARTITIONS, 1)])
    now = int(time.time() * 1000)
    produce(source, topic, [(i % PARTITIONS, f"k{i}".encode(), f"record-{i}".encode() * 4, [("i", str(i).encode())],
                             now + i) for i in range(RECORDS)], **{"linger.ms": 50})
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(plan_dict(source, target, topic, engine={"progress_interval_s": 0.5})))

    rng = random.Random(7)
    kills = 0
    copied_per_run = []
    for _ in range(4):
        # Kill at a random point of the copy: once the target grew by 5-20% of the data set since the last kill.
        before = _copied(target, topic)
        threshold = before + int(rng.uniform(0.05, 0.2) * RECORDS)
        engine = _start_engine(plan_file)
        deadline = time.monotonic() + 120
        while _copied(target, topic) < threshold and engine.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert engine.poll() is None, "the engine exited on its own"
        os.kill(engine.pid, signal.SIGKILL)
        engine.wait()
        kills += 1
        copied_per_run.append(_copied(target, topic) - before)
    assert _copied(target, topic) < RECORDS + RECORDS // 2, "the kills came too late to land mid-copy"
    final = subprocess.run(
        [sys.executable, "-m", "mirror_engine.cli", "run", "--plan", str(plan_file), "--until-caught-up",
         "--max-seconds", "300"], capture_output=True, text=True, timeout=400)
    assert final.returncode == 0, final.stderr[-3000:]

    duplicates = 0
    for partition in range(PARTITIONS):
        expected = [r.content() for r in read_partition(source, topic, partition)]
        copied = [r.content() for r in read_partition(target, topic, partition)]
        counts = collections.Counter(copied)
        assert set(counts) == set(expected), f"partition {partition}: records lost"
        duplicates += sum(n - 1 for n in counts.values())
        # Each record's first copy comes in source order: re-sent tails only repeat what came before.
        first_seen = list(dict.fromkeys(copied))
        assert first_seen == expected, f"partition {partition}: order broken"
        # The copy is a few ascending runs of the source: it steps back only where a restarted engine re-sent
        # the tail after its stored progress, so at most once per kill.
        index = {content: i for i, content in enumerate(expected)}
        steps_back = sum(1 for a, b in itertools.pairwise(copied) if index[b] <= index[a])
        assert steps_back <= kills, f"partition {partition}: {steps_back} re-sent ranges for {kills} kills"
    print(f"\n{kills} kills: {RECORDS} records, {duplicates} duplicates from re-sent unacknowledged tails")
    # Each restart resumed from the progress stored by the run before it: it re-sent at most what that run
    # had copied, never what earlier runs had (as a restart from the start, or from stale progress, would).
    assert duplicates <= sum(copied_per_run), (duplicates, copied_per_run)
