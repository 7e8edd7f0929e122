"""A group coordinator silent for longer than a group call waits, then back: the process lives on.

librdkafka 2.16 aborts the whole process when an admin request to a group coordinator reaches its `request_timeout`
before the coordinator answered, and the coordinator answers later (confluentinc/librdkafka#4605): a checkpoint round
during a target broker's long pause or restart took the engine, and its copy, down. The group calls give the
client's requests `COORDINATOR_PATIENCE_S` and wait their own time. The calls run in a child process, whose abort
the test sees as its exit status."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_local.cluster import start_cluster

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]

CALLS = """
import json, os, signal, sys, time
from confluent_kafka.admin import AdminClient
from mirror_engine.kafka import committed_offsets_of, describe_groups

bootstrap, broker = sys.argv[1], int(sys.argv[2])
groups = [f"silent-{i}" for i in range(5)]
# The coordinators loaded first (a fresh cluster's first group request creates its offsets topic), as on a cluster
# in use: what follows meets the silence only.
assert all(not isinstance(a, Exception) for a in describe_groups(AdminClient({"bootstrap.servers": bootstrap}),
                                                                  groups, timeout_s=60).values())
admin = AdminClient({"bootstrap.servers": bootstrap})  # a client that has yet to find the groups' coordinator
admin.list_topics(timeout=10)
os.kill(broker, signal.SIGSTOP)
try:
    offsets = committed_offsets_of(admin, groups, timeout_s=2)
    described = describe_groups(admin, groups, timeout_s=2)
finally:
    os.kill(broker, signal.SIGCONT)
time.sleep(8)  # the coordinator, back, answers the requests still waiting in the client
print(json.dumps({"offsets": {g: str(a) for g, a in offsets.items()},
                  "described": {g: str(a) for g, a in described.items()}}))
"""


def test_a_group_coordinator_silent_past_the_wait_then_back_does_not_abort_the_process(tmp_path):
    cluster = start_cluster("silent", tmp_path / "cluster")
    try:
        done = subprocess.run([sys.executable, "-c", CALLS, cluster.bootstrap, str(cluster.pid)], cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
                              timeout=120)
    finally:
        os.kill(cluster.pid, 18)  # SIGCONT, should the child have died between its stop and its continue
        cluster.stop()
    # Before: the child aborted (-6) once the coordinator answered, 2 s after each request's timeout.
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    answers = json.loads(done.stdout.strip().splitlines()[-1])
    for call in ("offsets", "described"):
        assert sorted(answers[call]) == [f"silent-{i}" for i in range(5)], answers
        assert all("no answer from the group's coordinator within 2 s" in text for text in answers[call].values()), \
            answers
