"""An MM2 file of several enabled flows, run by one `mirror-engine run --mm2-config FILE` as MM2's dedicated mode runs
them: active/active without a loop, heartbeats both ways, a flow that fails ending alone, an identity-policy loop
refused before anything starts, a group that failed over coming back at its next record, and no flow outliving the
command."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_local.cluster import free_port
from mirror_engine.kafka import commit_offsets, committed_offsets, read_to_end
from mirror_engine.mm2 import Checkpoint
from tests.integration.plans import create_topics

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
RECORDS = 20


def _file(path: Path, source, target, prefix: str, *extra: str) -> Path:
    path.write_text("\n".join([
        "clusters = a, b",
        f"a.bootstrap.servers = {source.bootstrap}",
        f"b.bootstrap.servers = {target.bootstrap}",
        "a->b.enabled = true",
        "b->a.enabled = true",
        f"topics = {prefix}-.*",
        "sync.topic.acls.enabled = false",
        "refresh.topics.interval.seconds = 1",
        "replication.factor = 1",
        *(f"{name}.replication.factor = 1" for name in
          ("checkpoints.topic", "heartbeats.topic", "offset-syncs.topic")),
        *extra,
        "",
    ]))
    return path


def _write(cluster, topic: str, partitions: int = 2) -> None:
    create_topics(cluster, [NewTopic(topic, partitions, 1)])
    producer = Producer(cluster.client_config())
    for i in range(RECORDS):
        producer.produce(topic, b"%s-%d" % (topic.encode(), i), key=b"%d" % i, partition=i % partitions)
    assert producer.flush(10) == 0


def _end_total(cluster, topic: str) -> int:
    admin = AdminClient(cluster.client_config())
    metadata = admin.list_topics(timeout=10)
    if topic not in metadata.topics:
        return 0
    consumer = Consumer({**cluster.client_config(), "group.id": "flow-set-probe"})
    try:
        return sum(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                   for p in metadata.topics[topic].partitions)
    finally:
        consumer.close()


def _topics(cluster) -> set[str]:
    return set(AdminClient(cluster.client_config()).list_topics(timeout=10).topics)


def _start(config: Path, log: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "mirror_engine.cli", "run", "--mm2-config", str(config)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=log.open("w"), text=True)


def _stop(process: subprocess.Popen[str]) -> str:
    """SIGTERM, as a service manager stops the command; its standard output once every flow has ended."""
    process.send_signal(signal.SIGTERM)
    return process.communicate(timeout=120)[0]


def _wait(condition, what: str, process: subprocess.Popen[str], log: Path, timeout_s: float = 90.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert process.poll() is None, f"the run ended before {what}:\n{log.read_text()[-4000:]}"
        assert time.monotonic() < deadline, f"not within {timeout_s:.0f} s: {what}\n{log.read_text()[-4000:]}"
        time.sleep(0.3)


def test_an_active_active_file_runs_both_flows_in_one_command_without_a_loop(kafka_pair, unique_name, tmp_path):
    a, b = kafka_pair
    prefix = unique_name
    _write(a, f"{prefix}-orders")
    _write(b, f"{prefix}-payments")
    config = _file(tmp_path / "active-active.properties", a, b, prefix)
    log = tmp_path / "run.log"
    process = _start(config, log)
    try:
        _wait(lambda: _end_total(b, f"a.{prefix}-orders") == RECORDS and _end_total(a, f"b.{prefix}-payments")
              == RECORDS, "each side's topic copied to the other", process, log)
        # Each flow sees the other's remote topic within a second (refresh.topics.interval.seconds = 1); five
        # refreshes later neither has copied it back, under any name.
        time.sleep(5)
        assert not [t for t in _topics(a) if t.startswith(("b.a.", "a.")) and prefix in t], _topics(a)
        assert not [t for t in _topics(b) if t.startswith(("a.b.", "b.")) and prefix in t], _topics(b)
        assert _end_total(b, f"a.{prefix}-orders") == RECORDS and _end_total(a, f"b.{prefix}-payments") == RECORDS
        # Heartbeats both ways, as MM2 writes them: each flow's into its target's `heartbeats`.
        assert _end_total(a, "heartbeats") > 0 and _end_total(b, "heartbeats") > 0
        text = log.read_text()
        assert "running 2 flows, one process each: a->b (pid" in text and "b->a (pid" in text, text[-3000:]
        assert re.search(r"^\[a->b\] ", text, re.M) and re.search(r"^\[b->a\] ", text, re.M), text[-3000:]
    finally:
        out = _stop(process)
    assert process.returncode == 0, log.read_text()[-4000:]
    summaries = {line["flow"]: line for line in map(json.loads, out.splitlines())}
    assert set(summaries) == {"a->b", "b->a"}, out
    assert summaries["a->b"]["records"] >= RECORDS and summaries["b->a"]["records"] >= RECORDS, out


def _write_in_transactions(cluster, topic: str, partitions: int = 2) -> None:
    """RECORDS records a partition, each in a transaction of its own: every other source offset is a commit marker,
    which the copy leaves out, so a copy's offsets are never its source's."""
    create_topics(cluster, [NewTopic(topic, partitions, 1)])
    producer = Producer({**cluster.client_config(), "transactional.id": f"{topic}-writer"})
    producer.init_transactions(30)
    for i in range(RECORDS):
        producer.begin_transaction()
        producer.produce(topic, b"%s-%d" % (topic.encode(), i), key=b"%d" % i, partition=i % partitions)
        producer.commit_transaction(30)


def _records(cluster, topic: str, partition: int, offset: int = 0):
    """The committed records of a partition from `offset` on, as a consumer reads them, until its end."""
    consumer = Consumer({**cluster.client_config(), "group.id": "flow-set-probe", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "enable.partition.eof": True})
    try:
        consumer.assign([TopicPartition(topic, partition, offset)])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            message = consumer.poll(1)
            if message is None:
                continue
            if message.error():
                return
            yield message
        raise AssertionError(f"{topic}[{partition}] not read to its end in 30 s")
    finally:
        consumer.close()


def _value_at(cluster, topic: str, partition: int, offset: int) -> bytes:
    return next(_records(cluster, topic, partition, offset)).value()


def _offset_of(cluster, topic: str, partition: int, value: bytes) -> int:
    found = [message.offset() for message in _records(cluster, topic, partition) if message.value() == value]
    assert len(found) == 1, f"{value!r} is {len(found)} times in {topic}[{partition}]"
    return found[0]


def test_a_group_that_failed_over_resumes_on_its_original_cluster_at_its_next_record(kafka_pair, unique_name,
                                                                                       tmp_path):
    """Active/active with group offset sync: a group reads `orders` on a, fails over to b (its offsets carried to
    `a.orders` there by a->b), reads further on b, and comes back: b->a translates its offsets on `a.orders` back
    through a->b's mapping to `orders` on a, checkpointed in MM2's format and committed while the group is idle.
    The source has a commit marker at every other offset, so no offset is the same on both sides."""
    a, b = kafka_pair
    prefix, group = unique_name, f"{unique_name}-billing"
    orders = f"{prefix}-orders"
    _write_in_transactions(a, orders)
    commit_offsets(AdminClient(a.client_config()), group, {(orders, 0): 4, (orders, 1): 6})
    config = _file(tmp_path / "active-active.properties", a, b, prefix, f"groups = {group}",
                   "sync.group.offsets.enabled = true", "sync.group.offsets.interval.seconds = 1",
                   "emit.checkpoints.interval.seconds = 1", "refresh.groups.interval.seconds = 1")
    log = tmp_path / "run.log"
    process = _start(config, log)
    on_a, on_b = AdminClient(a.client_config()), AdminClient(b.client_config())
    try:
        # Failing over: the group's offsets on a, translated onto b's copy (records 2 and 3 of each partition).
        _wait(lambda: committed_offsets(on_b, group) == {(f"a.{orders}", 0): 2, (f"a.{orders}", 1): 3},
              "the group's offsets synced to b", process, log)
        # On b it reads on: records up to 4 of partition 0 and 6 of partition 1, then it stops.
        read_on_b = {0: 5, 1: 7}
        commit_offsets(on_b, group, {(f"a.{orders}", p): offset for p, offset in read_on_b.items()})
        # Coming back: on a, each partition's next record is the one after the last read on b.
        expected = {(orders, p): _offset_of(a, orders, p, _value_at(b, f"a.{orders}", p, offset))
                    for p, offset in read_on_b.items()}
        assert expected == {(orders, 0): 10, (orders, 1): 14}  # two source offsets a record
        _wait(lambda: committed_offsets(on_a, group) == expected, "the group's offsets translated back to a",
              process, log)
        written = read_to_end(a.client_config(), "b.checkpoints.internal")
        checkpoints = {(c.topic, c.partition): (c.upstream_offset, c.downstream_offset) for c in (
            Checkpoint.from_record(m.key(), m.value()) for m in written) if c.group == group}
        assert {key: checkpoints.get(key) for key in expected} == {
            (orders, p): (read_on_b[p], expected[(orders, p)]) for p in read_on_b}
        # Kept: the way forward does not move the group on b back to where it was on a.
        time.sleep(3)
        assert committed_offsets(on_b, group) == {(f"a.{orders}", p): o for p, o in read_on_b.items()}
    finally:
        _stop(process)
    assert process.returncode == 0, log.read_text()[-3000:]


def test_a_flow_that_fails_ends_alone_and_the_others_go_on(kafka_pair, unique_name, tmp_path):
    a, b = kafka_pair
    prefix = unique_name
    _write(a, f"{prefix}-orders")
    config = tmp_path / "hub.properties"
    config.write_text("\n".join([
        "clusters = a, gone, b",
        f"a.bootstrap.servers = {a.bootstrap}",
        f"gone.bootstrap.servers = 127.0.0.1:{free_port()}",
        "gone.socket.connection.setup.timeout.ms = 1000",
        f"b.bootstrap.servers = {b.bootstrap}",
        "a->b.enabled = true",
        "gone->b.enabled = true",
        f"topics = {prefix}-.*",
        "sync.topic.acls.enabled = false",
        "replication.factor = 1",
        *(f"{name}.replication.factor = 1" for name in
          ("checkpoints.topic", "heartbeats.topic", "offset-syncs.topic")),
        "",
    ]))
    log = tmp_path / "run.log"
    process = _start(config, log)
    try:
        _wait(lambda: "error: flow gone->b ended with status 3" in log.read_text(), "the unreachable flow's end",
              process, log)
        assert "still running: a->b" in log.read_text()
        _wait(lambda: _end_total(b, f"a.{prefix}-orders") == RECORDS, "a->b copied", process, log)
    finally:
        _stop(process)
    assert process.returncode == 1, log.read_text()[-3000:]  # not every flow ended well


def test_an_identity_policy_loop_is_refused_before_anything_starts(kafka_pair, unique_name, tmp_path):
    a, b = kafka_pair
    prefix = unique_name
    _write(a, f"{prefix}-orders")
    before_a, before_b = _topics(a), _topics(b)
    config = _file(tmp_path / "identity.properties", a, b, prefix,
                   "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy")
    result = subprocess.run([sys.executable, "-m", "mirror_engine.cli", "run", "--mm2-config", str(config)],
                            cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    assert "these flows make a loop (a->b->a)" in result.stderr and "identity replication policy" in result.stderr
    assert _topics(a) == before_a and _topics(b) == before_b  # nothing created on either side

    # Listed by name, with none taken back by the other flow: no loop, so the file runs.
    disjoint = _file(tmp_path / "disjoint.properties", a, b, prefix,
                     "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
                     f"a->b.topics = {prefix}-orders", f"b->a.topics = {prefix}-payments")
    log = tmp_path / "disjoint.log"
    process = _start(disjoint, log)
    try:
        _wait(lambda: _end_total(b, f"{prefix}-orders") == RECORDS, "orders copied under its own name", process, log)
    finally:
        _stop(process)
    assert process.returncode == 0, log.read_text()[-3000:]


def test_no_flow_outlives_the_command_killed_with_sigkill(kafka_pair, unique_name, tmp_path):
    a, b = kafka_pair
    prefix = unique_name
    _write(a, f"{prefix}-orders")
    config = _file(tmp_path / "active-active.properties", a, b, prefix)
    log = tmp_path / "run.log"
    process = _start(config, log)
    _wait(lambda: _end_total(b, f"a.{prefix}-orders") == RECORDS, "a->b copied", process, log)
    pids = [int(pid) for pid in re.findall(r"\(pid (\d+)\)", log.read_text())]
    assert len(pids) == 2, log.read_text()[-3000:]
    os.kill(process.pid, signal.SIGKILL)
    process.communicate(timeout=30)
    deadline = time.monotonic() + 90  # each child stops as after SIGTERM: its in-flight records, its progress
    while any(Path(f"/proc/{pid}").exists() and "zombie" not in _state(pid) for pid in pids):
        assert time.monotonic() < deadline, f"flows still running 90 s after the command was killed: {pids}"
        time.sleep(0.5)


def _state(pid: int) -> str:
    try:
        return "zombie" if Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z" else "running"
    except OSError:
        return "zombie"
