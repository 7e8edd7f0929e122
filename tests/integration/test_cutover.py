"""Checkpoints and cutover on real clusters: switched groups resume exactly; fences hold; active groups untouched."""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from mirror_engine.cutover import (
    Checkpointer,
    GroupReadyToSwitch,
    GroupSwitcher,
    SwitchError,
    fingerprint,
    records_around,
    records_around_all,
    switch_producers,
)
from mirror_engine.flow import FlowMapping, InternalTopics
from mirror_engine.kafka import (
    Acl,
    commit_offsets,
    committed_offsets,
    create_acls,
    group_fence,
    list_offsets,
    read_acls,
    read_to_end,
)
from mirror_engine.mm2 import Checkpoint
from mirror_engine.observe import ReportStore
from mirror_engine.replication import Replicator
from tests.integration.kafka_data import produce, produce_transactions, read_partition, wait_for_compaction_gaps
from tests.integration.plans import create_topics, make_plan

pytestmark = pytest.mark.integration

NOW = int(time.time() * 1000)


def _content(message) -> tuple:
    return (message.key(), message.value(), tuple(message.headers() or ()), message.timestamp()[1])


def _consume(config: dict, group: str, topics: list[str], stop_when, timeout_s: float = 60) -> dict:
    """Consume as `group` until `stop_when(read)` holds; commit what was read and leave the group."""
    consumer = Consumer({**config, "group.id": group, "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed", "enable.partition.eof": True,
                         "error_cb": lambda error: print("consumer error:", error.str())})
    consumer.subscribe(topics)
    read: dict[tuple[str, int], list[tuple]] = defaultdict(list)
    eof: set[tuple[str, int]] = set()
    deadline = time.monotonic() + timeout_s
    try:
        while not stop_when(read, eof):
            assert time.monotonic() < deadline, f"group {group} did not finish reading: " \
                f"{ {key: len(records) for key, records in read.items()} } records read"
            for message in consumer.consume(200, timeout=0.5):
                error = message.error()
                if error is not None:
                    assert error.code() == KafkaError._PARTITION_EOF, error.str()
                    eof.add((message.topic(), message.partition()))
                    continue
                eof.discard((message.topic(), message.partition()))
                read[(message.topic(), message.partition())].append(_content(message))
        if read:
            consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return read


class LiveProducer(threading.Thread):
    """Keeps writing keyed records with headers to a topic until stopped."""

    def __init__(self, config: dict, topic: str, partitions: int) -> None:
        super().__init__(daemon=True)
        self.config, self.topic, self.partitions = config, topic, partitions
        self.halt = threading.Event()

    def run(self) -> None:
        producer = Producer({**self.config, "linger.ms": 5})
        i = 0
        while not self.halt.is_set():
            producer.produce(self.topic, f"live-{i}".encode(), f"k{i % 7}".encode(), i % self.partitions,
                             headers=[("seq", str(i).encode())])
            i += 1
            if i % 20 == 0:  # about 200 records a second
                producer.flush(10)
                time.sleep(0.1)
        producer.flush(30)


@pytest.fixture
def cutover_topics(kafka_pair, unique_name):
    """A plain topic (3 partitions), a compacted one with gaps, a transactional one with aborted transactions."""
    source, _ = kafka_pair
    p = f"{unique_name}-"
    create_topics(source, [
        NewTopic(p + "plain", 3, 1),
        NewTopic(p + "compacted", 1, 1, config={
            "cleanup.policy": "compact", "segment.ms": "100", "min.cleanable.dirty.ratio": "0.001",
            "min.compaction.lag.ms": "0", "delete.retention.ms": "100"}),
        NewTopic(p + "txn", 2, 1),
    ])
    produce(source, p + "plain", [(i % 3, f"k{i}".encode(), f"v{i}".encode(), [("h", b"1")], NOW + i)
                                  for i in range(600)])
    for round_, keys, count in ((1, 20, 200), (2, 10, 200), (3, 1, 1)):
        produce(source, p + "compacted", [(0, f"k{i % keys}".encode(), f"v{round_}-{i}".encode(), None,
                                           NOW + round_ * 1000 + i) for i in range(count)])
        time.sleep(0.5)
    wait_for_compaction_gaps(source, p + "compacted", 0)
    produce_transactions(source, p + "txn", 2, transactions=12, per_transaction=20, abort_every=3,
                         transactional_id=f"{unique_name}-txn")
    return p


def _run_engine(plan, source, target) -> tuple[Replicator, threading.Thread]:
    replicator = Replicator(plan, source.client_config(), target.client_config())
    runner = threading.Thread(target=replicator.run, kwargs={"max_seconds": 240}, daemon=True)
    runner.start()
    return replicator, runner


def test_switched_group_reads_every_record_exactly_once_across_clusters(kafka_pair, cutover_topics, unique_name):
    source, target = kafka_pair
    p = cutover_topics
    topics = [p + "plain", p + "compacted", p + "txn"]
    partitions = {p + "plain": 3, p + "compacted": 1, p + "txn": 2}
    plan = make_plan(source, target, p, engine={"refresh_interval_s": 2})
    group = f"{unique_name}-app"
    live = [LiveProducer(source.client_config(), p + "plain", 3)]
    replicator, runner = _run_engine(plan, source, target)
    part = {(t, n): min(40, len(read_partition(source, t, n)) // 2)
            for t, count in partitions.items() for n in range(count)}
    try:
        for producer in live:
            producer.start()
        # The application reads part of every partition on the source, commits, and stops.
        on_source = _consume(source.client_config(), group, topics,
                             lambda read, _eof: all(len(read[key]) >= wanted for key, wanted in part.items()))
        report = GroupSwitcher(plan, source.client_config(), target.client_config()).switch(group, timeout_s=120)
        assert report.ok, report.render()
        # The report is kept on the target, where any component (the cockpit) reads it.
        stored = ReportStore(plan, target.client_config()).read("group-switch")[f"group-switch:{group}"]
        assert stored["report"] == json.loads(report.to_json())
        assert {(row.topic, row.partition) for row in report.partitions} == {
            (t, n) for t, count in partitions.items() for n in range(count)}
        for producer in live:
            producer.halt.set()
            producer.join(30)
        # Everything the source holds reaches the target, then the group goes on there.
        ends = {(t, n): read_partition(source, t, n) for t, count in partitions.items() for n in range(count)}
        with FlowMapping(plan, target.client_config()) as mapping:
            deadline = time.monotonic() + 120
            while not all((mapping.refresh().copied_position(*key) or 0) >= (records[-1].offset + 1)
                          for key, records in ends.items()):
                assert time.monotonic() < deadline, "the engine did not catch up"
                time.sleep(0.5)
        on_target = _consume(target.client_config(), group, topics,
                             lambda _read, eof: len(eof) == len(ends))
    finally:
        for producer in live:
            producer.halt.set()
        replicator.stop()
        runner.join(60)

    for (topic, partition), records in ends.items():
        union = on_source[(topic, partition)] + on_target.get((topic, partition), [])
        expected = [r.content() for r in records]
        assert len(union) == len(expected), f"{topic}[{partition}]: {len(union) - len(expected)} records re-read"
        assert union == expected, f"{topic}[{partition}]: the group's records across both clusters differ"


def test_the_proof_finds_the_records_around_each_position_as_a_partition_read_alone(kafka_pair, cutover_topics):
    """The switch's proof reads all partitions with one consumer per cluster: around compaction gaps, transaction
    markers and aborted records, at the log's start and end, it finds the same records as a partition read alone."""
    source, _ = kafka_pair
    p = cutover_topics
    config = source.client_config()
    keys = [(p + "plain", n) for n in range(3)] + [(p + "compacted", 0)] + [(p + "txn", n) for n in range(2)]
    ends = list_offsets(AdminClient(config), [TopicPartition(*key) for key in keys], OffsetSpec.latest())
    for offset in (0, 1, 63, 64, 65, 100, 130, 199, 250, 399, 400, 401):
        positions = {key: min(offset, ends[key]) for key in keys}
        found = records_around_all(config, positions)
        for key, position in positions.items():
            alone = records_around(config, *key, position)
            assert [fingerprint(m) for m in found[key]] == [fingerprint(m) for m in alone], (key, position)
            assert [m.offset() if m else None for m in found[key]] == [m.offset() if m else None for m in alone]


def test_checkpoints_sync_offsets_only_while_the_target_group_is_empty(kafka_pair, cutover_topics, unique_name):
    source, target = kafka_pair
    p = cutover_topics
    plan = make_plan(source, target, p, groups={"include": [f"{unique_name}.*"]})
    group = f"{unique_name}-reader"
    _consume(source.client_config(), group, [p + "plain"],
             lambda read, _eof: len(read) == 3 and sum(len(v) for v in read.values()) >= 100)  # every partition
    replicator = Replicator(plan, source.client_config(), target.client_config())
    assert replicator.run(max_seconds=120, until_caught_up=True).ok
    source_offsets = committed_offsets(AdminClient(source.client_config()), group)

    # A consumer of the group is running on the target: its offsets are left alone.
    busy = Consumer({**target.client_config(), "group.id": group, "auto.offset.reset": "latest",
                     "enable.auto.commit": False})
    busy.subscribe([p + "plain"])
    deadline = time.monotonic() + 30
    while not busy.assignment():
        busy.poll(0.2)
        assert time.monotonic() < deadline, "the target consumer never joined"
    checkpointer = Checkpointer(plan, source.client_config(), target.client_config())
    try:
        result = next(r for r in checkpointer.run_once(sync_offsets=True) if r.group == group)
        assert "active member" in result.skipped and not result.committed
        assert result.checkpoints == len(source_offsets) > 1
        assert committed_offsets(AdminClient(target.client_config()), group) == {}
        busy.close()

        result = next(r for r in checkpointer.run_once(sync_offsets=True) if r.group == group)
        assert result.committed and not result.skipped
        assert result.checkpoints == 0  # nothing moved: no checkpoint written again (as MirrorMaker 2)

        # The group is moved back 5 records on one partition on the source (a reset; moving it on could pass the
        # partition's end): that partition's checkpoint alone is written, and the target group is not moved back.
        synced = dict(source_offsets)
        moved = max(source_offsets, key=source_offsets.__getitem__)
        source_offsets[moved] -= 5
        commit_offsets(AdminClient(source.client_config()), group, {moved: source_offsets[moved]})
        result = next(r for r in checkpointer.run_once(sync_offsets=True) if r.group == group)
        assert result.checkpoints == 1 and not result.committed
        assert result.kept_ahead == [f"{moved[0]}[{moved[1]}]"]
    finally:
        checkpointer.close()
    target_offsets = committed_offsets(AdminClient(target.client_config()), group)
    # Identity policy, fresh target: the plain topic's offsets are the same on both sides (as synced).
    assert target_offsets == synced
    # The checkpoints on the target decode with MM2's schema and say the same.
    beats = [Checkpoint.from_record(m.key(), m.value())
             for m in read_to_end(target.client_config(), InternalTopics.for_plan(plan).checkpoints)]
    mine = {(c.topic, c.partition): (c.upstream_offset, c.downstream_offset) for c in beats if c.group == group}
    assert mine == {key: (offset, offset) for key, offset in source_offsets.items()}


def test_switch_refuses_a_group_active_on_the_target(kafka_pair, cutover_topics, unique_name):
    source, target = kafka_pair
    plan = make_plan(source, target, cutover_topics)
    group = f"{unique_name}-busy"
    create_topics(target, [NewTopic(cutover_topics + "plain", 3, 1)])
    busy = Consumer({**target.client_config(), "group.id": group, "auto.offset.reset": "latest"})
    busy.subscribe([cutover_topics + "plain"])
    try:
        deadline = time.monotonic() + 30
        while not busy.assignment():
            busy.poll(0.2)
            assert time.monotonic() < deadline
        with pytest.raises(SwitchError, match="active members on the target"):
            GroupSwitcher(plan, source.client_config(), target.client_config()).switch(group, timeout_s=5)
    finally:
        busy.close()


def test_a_switch_waits_on_the_check_its_sensor_defers_on(kafka_pair, cutover_topics, unique_name):
    """One definition of "ready to switch": a switch that cannot go on says what the sensor's check says."""
    source, target = kafka_pair
    plan = make_plan(source, target, cutover_topics)
    group = f"{unique_name}-still-reading"
    reader = Consumer({**source.client_config(), "group.id": group, "auto.offset.reset": "earliest"})
    reader.subscribe([cutover_topics + "plain"])
    try:
        deadline = time.monotonic() + 30
        while not reader.assignment():
            reader.poll(0.2)
            assert time.monotonic() < deadline
        check = GroupReadyToSwitch(plan, source.client_config(), target.client_config(), group=group)
        try:
            waiting = check.check()
        finally:
            check.close()
        assert not waiting.done and "member(s) on the source to stop" in waiting.progress
        with pytest.raises(SwitchError) as refused:
            GroupSwitcher(plan, source.client_config(), target.client_config()).switch(group, timeout_s=2)
        assert waiting.progress in str(refused.value) and "nothing was committed on the target" in str(refused.value)
    finally:
        reader.close()

    topic = cutover_topics + "plain"
    writer = LiveProducer(source.client_config(), topic, 3)
    writer.start()
    try:
        with pytest.raises(SwitchError, match=rf"still waiting after 3 s: topic {topic}: no write on the source "
                                              r"for \d+ s of 60 s"):
            switch_producers(plan, source.client_config(), target.client_config(), topic, idle_s=60, timeout_s=3)
    finally:
        writer.halt.set()
        writer.join(30)


def test_switch_producers_stops_copying_the_topic(kafka_pair, unique_name):
    source, target = kafka_pair
    topic = f"{unique_name}-orders"
    create_topics(source, [NewTopic(topic, 2, 1)])
    produce(source, topic, [(i % 2, b"k", f"v{i}".encode(), None, NOW + i) for i in range(200)])
    plan = make_plan(source, target, topic)
    replicator, runner = _run_engine(plan, source, target)
    try:
        report = switch_producers(plan, source.client_config(), target.client_config(), topic, idle_s=1,
                                  timeout_s=120)
        assert report.copied == report.end_offsets == {0: 100, 1: 100}
        stored = ReportStore(plan, target.client_config()).read("producer-switch")[f"producer-switch:{topic}"]
        assert stored["report"] == json.loads(report.to_json())
        deadline = time.monotonic() + 15
        while any(key[0] == topic for key in replicator.states):
            assert time.monotonic() < deadline, "the engine kept copying a switched topic"
            time.sleep(0.2)
        # Producers now write to the target; a late write on the source is not copied over them.
        produce(target, topic, [(0, b"k", b"written-on-target", None, NOW)])
        produce(source, topic, [(0, b"k", b"late-on-source", None, NOW)])
        time.sleep(3)
        assert not replicator.fatal and replicator.summary(0).ok
    finally:
        replicator.stop()
        runner.join(60)
    values = [r.value for r in read_partition(target, topic, 0)]
    assert values[-1] == b"written-on-target" and b"late-on-source" not in values and len(values) == 101

    # A restarted engine remembers the switch.
    again = Replicator(plan, source.client_config(), target.client_config())
    assert again.run(max_seconds=10).ok
    assert not any(key[0] == topic for key in again.states)


def test_fenced_group_cannot_consume_until_rollback(secured_pair, unique_name):
    source, target = secured_pair
    topic = f"{unique_name}-fenced"
    group = f"{unique_name}-app"
    create_topics(source, [NewTopic(topic, 1, 1)])
    produce(source, topic, [(0, f"k{i}".encode(), f"v{i}".encode(), None, NOW + i) for i in range(50)])
    create_acls(AdminClient(source.client_config()), [
        Acl("TOPIC", topic, "LITERAL", "User:alice", "*", "READ", "ALLOW"),
        Acl("GROUP", group, "LITERAL", "User:alice", "*", "READ", "ALLOW"),
    ])
    alice = source.client_config("alice")
    time.sleep(2)  # ACLs reach the broker's authorizer asynchronously
    first = _consume(alice, group, [topic], lambda read, _eof: len(read[(topic, 0)]) >= 20)
    plan = make_plan(source, target, topic)
    assert Replicator(plan, source.client_config(), target.client_config()).run(max_seconds=60,
                                                                                until_caught_up=True).ok
    switcher = GroupSwitcher(plan, source.client_config(), target.client_config())
    report = switcher.switch(group, fence=True, timeout_s=60)
    assert report.ok and report.fenced
    # The fence is not carried to the target by a later prepare: it would lock the group out there.
    assert Replicator(plan, source.client_config(), target.client_config()).run(max_seconds=30,
                                                                                until_caught_up=True).ok
    assert group_fence(group) in read_acls(AdminClient(source.client_config()))
    assert group_fence(group) not in read_acls(AdminClient(target.client_config()))

    time.sleep(2)
    consumer = Consumer({**alice, "group.id": group, "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    refused = None
    deadline = time.monotonic() + 30
    try:
        while refused is None and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            assert message is None or message.error() is not None, "a fenced group read from the source"
            if message is not None and message.error().code() == KafkaError.GROUP_AUTHORIZATION_FAILED:
                refused = message.error()
    finally:
        consumer.close()
    assert refused is not None, "the fenced group was not refused"

    back = switcher.rollback(group, timeout_s=60)
    assert back.ok
    assert group_fence(group) not in read_acls(AdminClient(source.client_config()))
    assert committed_offsets(AdminClient(source.client_config()), group) == {(topic, 0): len(first[(topic, 0)])}
    time.sleep(2)
    # The group goes on on the source from where the target left it, with records written since.
    produce(source, topic, [(0, f"k{i}".encode(), f"v{i}".encode(), None, NOW + i) for i in range(50, 80)])
    time.sleep(2)  # the fence's removal reaches the authorizer asynchronously
    rest = _consume(alice, group, [topic], lambda _read, eof: (topic, 0) in eof)
    assert first[(topic, 0)] + rest[(topic, 0)] == [r.content() for r in read_partition(source, topic, 0)]


def test_cli_switches_a_group_and_prints_the_report(kafka_pair, unique_name, tmp_path):
    import json
    import subprocess
    import sys

    import yaml

    from tests.integration.plans import plan_dict

    source, target = kafka_pair
    topic = f"{unique_name}-cli"
    group = f"{unique_name}-app"
    create_topics(source, [NewTopic(topic, 2, 1)])
    produce(source, topic, [(i % 2, b"k", f"v{i}".encode(), None, NOW + i) for i in range(100)])
    consumer = Consumer({**source.client_config(), "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    read = 0
    while read < 10:
        message = consumer.poll(1.0)
        read += message is not None and message.error() is None
    consumer.commit(asynchronous=False)
    consumer.close()
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(plan_dict(source, target, topic, groups={"include": [f"{unique_name}.*"]})))

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "mirror_engine.cli", *args, "--plan", str(plan_file)],
                              capture_output=True, text=True, timeout=300)

    assert cli("run", "--until-caught-up", "--max-seconds", "120").returncode == 0
    checkpointed = cli("checkpoint", "--once")
    assert checkpointed.returncode == 0, checkpointed.stderr[-2000:]
    line = next(json.loads(raw) for raw in checkpointed.stdout.splitlines() if group in raw)
    on_source = committed_offsets(AdminClient(source.client_config()), group)
    assert line["checkpoints"] == len(on_source) and len(line["committed"]) == len(on_source), line

    report_file = tmp_path / "switch.json"
    switched = cli("switch-group", "--group", group, "--report", str(report_file))
    assert switched.returncode == 0, switched.stderr[-2000:]
    assert f"group {group} switched src->tgt: verified" in switched.stdout
    report = json.loads(report_file.read_text())
    assert report["ok"] and {(row["topic"], row["partition"]) for row in report["partitions"]} == set(on_source)
    assert committed_offsets(AdminClient(target.client_config()), group) == on_source

    unknown = cli("switch-producers", "--topic", "not-in-the-plan")
    assert unknown.returncode == 1 and "not copied by plan" in unknown.stderr
