"""A ZooKeeper-era source (Kafka 2.8 with an authorizer) migrated to Kafka 4: every topic it carries reaches the
target, old formats and configs included; a topic the target refuses does not stop the others."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from confluent_kafka import (
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    TIMESTAMP_NOT_AVAILABLE,
    Consumer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from mirror_engine.kafka import Acl, committed_offsets, create_acls, delete_acls, read_acls
from mirror_engine.plan import plan_from_dict
from mirror_engine.replication import Replicator
from spark_jobs import validate
from tests.integration.kafka_data import end_offsets, produce, read_partition
from tests.integration.plans import cluster_section, create_topics

pytestmark = [pytest.mark.integration, pytest.mark.spark]

PARTITIONS = 3
RECORDS = 300
NOW = int(time.time() * 1000) - 60_000


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mirror_engine.cli", *args], capture_output=True, text=True,
                          timeout=300)


def _records(name: str, headers: bool) -> list[tuple]:
    return [(i % PARTITIONS, f"k{i % 50}".encode(), f"{name}-{i}".encode(),
             [("n", str(i).encode())] if headers and i % 2 else None, NOW + i) for i in range(RECORDS)]


def _produce_as_old_client(cluster, topic: str, records: list[tuple]) -> None:
    """Records sent in message format v1 by a client speaking Kafka 0.10's protocol (no headers)."""
    produce(cluster, topic, records, **{"api.version.request": False, "broker.version.fallback": "0.10.0.0"})


def read_topic(cluster, topic: str, partitions: int = PARTITIONS) -> dict[int, list[tuple]]:
    """Every record of every partition, in order, with one consumer: (key, value, headers, timestamp type,
    timestamp) per record."""
    ends = end_offsets(cluster, topic, partitions)
    consumer = Consumer({**cluster.client_config(), "group.id": "legacy-reader", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    records: dict[int, list[tuple]] = {p: [] for p in range(partitions)}
    deadline = time.monotonic() + 60
    try:
        while any(records[p] == [] or records[p][-1][0] < ends[p] - 1 for p in range(partitions) if ends[p]):
            assert time.monotonic() < deadline, f"{topic} not read to its end"
            for message in consumer.consume(1000, timeout=0.5):
                assert message.error() is None, message.error()
                kind, timestamp = message.timestamp()
                records[message.partition()].append((message.offset(), message.key(), message.value(),
                                                     tuple(message.headers() or ()), kind, timestamp))
    finally:
        consumer.close()
    return {p: [r[1:] for r in rows] for p, rows in records.items()}


def load_legacy_topics(cluster, p: str, acls: str = "prefixed", headers: bool = True) -> dict[str, str]:
    """Five topics of the kinds an old cluster carries, each with records, a group committed half-way through the
    plain one, and ACLs for a principal on the topics and the group (`acls`: prefixed; literal before Kafka 2.0,
    which has none; none before 0.11, which has no ACL API). Headers only where the broker knows them (0.11+)."""
    names = {kind: f"{p}.{kind}" for kind in ("oldformat", "tsdiff", "appendtime", "v1", "plain")}
    create_topics(cluster, [
        NewTopic(names["oldformat"], PARTITIONS, 1, config={"message.format.version": "0.10.0"}),
        NewTopic(names["tsdiff"], PARTITIONS, 1, config={"message.timestamp.difference.max.ms": "86400000"}),
        NewTopic(names["appendtime"], PARTITIONS, 1, config={"message.timestamp.type": "LogAppendTime"}),
        NewTopic(names["v1"], PARTITIONS, 1),
        NewTopic(names["plain"], PARTITIONS, 1, config={"retention.ms": "604800000"}),
    ])
    produce(cluster, names["oldformat"], _records("oldformat", headers=False))  # stored as v1 by the broker
    produce(cluster, names["tsdiff"], _records("tsdiff", headers=headers))
    produce(cluster, names["appendtime"], _records("appendtime", headers=headers))
    _produce_as_old_client(cluster, names["v1"], _records("v1", headers=False))
    produce(cluster, names["plain"], _records("plain", headers=headers))
    group = f"{p}.billing"
    consumer = Consumer({**cluster.client_config(), "group.id": group, "enable.auto.commit": False})
    consumer.commit(offsets=[TopicPartition(names["plain"], q, RECORDS // PARTITIONS // 2) for q in range(PARTITIONS)],
                    asynchronous=False)
    consumer.close()
    if acls == "none":
        return {**names, "group": group, "prefix": p}
    if acls == "prefixed":
        bindings = [Acl("TOPIC", f"{p}.", "PREFIXED", "User:alice", "*", op, "ALLOW") for op in ("READ", "WRITE")]
    else:
        bindings = [Acl("TOPIC", name, "LITERAL", "User:alice", "*", op, "ALLOW")
                    for name in names.values() for op in ("READ", "WRITE")]
    bindings.append(Acl("GROUP", group, "LITERAL", "User:alice", "*", "READ", "ALLOW"))
    create_acls(AdminClient(cluster.client_config()), bindings)
    return {**names, "group": group, "prefix": p}


@pytest.fixture
def legacy_topics(legacy_source, unique_name) -> dict[str, str]:
    """The five topics, group and ACLs on the 2.8 source."""
    return load_legacy_topics(legacy_source, unique_name.replace("_", "-")[:40])


def _plan_file(tmp_path: Path, source, target, prefix: str, target_user: str = "mirror", **engine: Any) -> Path:
    data = {
        "name": f"legacy-{prefix.replace('.', '-')[-40:]}",
        "source": cluster_section("src", source),
        "target": cluster_section("tgt", target, target_user),
        "topics": {"include": [f"{prefix}\\..*"]},
        "groups": {"include": [f"{prefix}\\..*"]},
        # The source's timestamp rules carried over (MirrorMaker 2's default list leaves them out).
        "sync": {"config_include": ["message\\.timestamp\\..*"]},
        "engine": {"refresh_interval_s": 2, "status_interval_s": 0.5, **engine},
        "validation": {"report_dir": str(tmp_path / "reports")},
    }
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture
def mirror_on_target(secured_pair, legacy_topics):
    """On the Kafka 4 target, `mirror` may do everything except create the topic `<p>.blocked` (a target policy
    that refuses one topic); the ACLs go when the test ends."""
    _source, target = secured_pair
    admin = AdminClient(target.client_config())
    # CREATE on the cluster would allow every topic: only topic-level CREATE, which the DENY narrows.
    allowed = [Acl("BROKER", "kafka-cluster", "LITERAL", "User:mirror", "*", operation, "ALLOW")
               for operation in ("ALTER", "DESCRIBE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE")]
    allowed += [Acl(kind, "*", "LITERAL", "User:mirror", "*", "ALL", "ALLOW")
                for kind in ("TOPIC", "GROUP", "TRANSACTIONAL_ID")]
    deny = Acl("TOPIC", f"{legacy_topics['prefix']}.blocked", "LITERAL", "User:mirror", "*", "CREATE", "DENY")
    create_acls(admin, [*allowed, deny])
    deadline = time.monotonic() + 15
    while not {*allowed, deny} <= (read_acls(admin) or frozenset()):
        assert time.monotonic() < deadline
        time.sleep(0.2)
    yield deny
    delete_acls(admin, [*allowed, deny])


def test_a_zookeeper_era_source_migrates_every_topic_to_kafka_4(legacy_source, secured_pair, legacy_topics,
                                                               mirror_on_target, spark, tmp_path, caplog):
    _source, target = secured_pair
    t = legacy_topics
    create_topics(legacy_source, [NewTopic(f"{t['prefix']}.blocked", 1, 1),
                                  NewTopic(f"{t['prefix']}.v0", 1, 1, config={"message.format.version": "0.9.0"})])
    produce(legacy_source, f"{t['prefix']}.v0", [(0, f"k{i}".encode(), f"v0-{i}".encode(), None, NOW + i)
                                                 for i in range(RECORDS)])  # stored without timestamps
    copy_started = int(time.time() * 1000)
    produce(legacy_source, f"{t['prefix']}.blocked", [(0, b"k", b"late", None, NOW)])
    plan_file = _plan_file(tmp_path, legacy_source, target, t["prefix"])

    # plan: each config the target does not know is said once, with its topics and what happens to it.
    planned = _cli("plan", "--plan", str(plan_file))
    assert planned.returncode == 0, planned.stderr
    assert (f"note: topic config message.format.version on 2 topic(s) ({t['oldformat']}, {t['prefix']}.v0): dropped: "
            "Kafka 4 writes "
            "only record format v2") in planned.stdout
    assert (f"note: topic config message.timestamp.difference.max.ms on 1 topic(s) ({t['tsdiff']}): translated to "
            "message.timestamp.before.max.ms and message.timestamp.after.max.ms") in planned.stdout

    # prepare: every topic the target accepts is created; the refused one is reported, and the exit is 1.
    prepared = _cli("prepare", "--plan", str(plan_file))
    assert prepared.returncode == 1, prepared.stdout + prepared.stderr
    assert f"FAILED create_topic {t['prefix']}.blocked" in prepared.stdout
    assert "applied 0," not in prepared.stdout
    admin = AdminClient(target.client_config())
    on_target = admin.list_topics(timeout=10).topics
    assert all(t[kind] in on_target for kind in ("oldformat", "tsdiff", "appendtime", "v1", "plain"))
    configs = {name: {e.name: e.value for e in future.result().values()} for name, future in admin.describe_configs(
        [ConfigResource(ConfigResource.Type.TOPIC, t[kind]) for kind in ("tsdiff", "appendtime")]).items()}
    tsdiff = next(v for k, v in configs.items() if k.name == t["tsdiff"])
    assert tsdiff["message.timestamp.before.max.ms"] == tsdiff["message.timestamp.after.max.ms"] == "86400000"
    assert next(v for k, v in configs.items() if k.name == t["appendtime"])["message.timestamp.type"] == \
        "LogAppendTime"
    assert Acl("GROUP", t["group"], "LITERAL", "User:alice", "*", "READ", "ALLOW") in read_acls(admin)

    # run: every ready topic is copied; the blocked one is named in the status, and copied once the target allows it.
    plan = plan_from_dict(yaml.safe_load(plan_file.read_text()))
    engine = Replicator(plan, legacy_source.client_config(), plan.client_configs()[1])
    failed: list[BaseException] = []

    def run() -> None:
        try:
            engine.run(max_seconds=240)
        except BaseException as error:
            failed.append(error)

    runner = threading.Thread(target=run)
    runner.start()
    try:
        deadline = time.monotonic() + 120
        while not engine.status_snapshot.get("blocked_topics"):
            assert not failed, failed
            assert time.monotonic() < deadline, "the status never named the blocked topic"
            time.sleep(0.5)
        assert [r for r in caplog.records if f"topic {t['prefix']}.blocked is not copied" in r.getMessage()]
        reason = engine.status_snapshot["blocked_topics"][f"{t['prefix']}.blocked"]
        assert "TOPIC_AUTHORIZATION_FAILED" in reason or "authoriz" in reason.lower(), reason
        _wait_copied(legacy_source, target, [t[k] for k in ("oldformat", "tsdiff", "appendtime", "v1", "plain")])
        _wait_copied(legacy_source, target, [f"{t['prefix']}.v0"], partitions=1)
        delete_acls(admin, [mirror_on_target])  # the cause passes: the next refresh creates and copies it
        _wait_copied(legacy_source, target, [f"{t['prefix']}.blocked"], partitions=1)
        assert engine.faults.blocked_topics == {}
    finally:
        engine.stop()
        runner.join(60)

    # Each topic copied exactly; the LogAppendTime one with the target broker's timestamps (its one difference).
    for kind in ("oldformat", "tsdiff", "appendtime", "v1", "plain"):
        source_records, target_records = read_topic(legacy_source, t[kind]), read_topic(target, t[kind])
        assert sum(len(rows) for rows in source_records.values()) == RECORDS
        if kind == "appendtime":  # key, value, headers kept; the timestamps are the target broker's
            assert {p: [r[:3] for r in rows] for p, rows in target_records.items()} == \
                {p: [r[:3] for r in rows] for p, rows in source_records.items()}
            assert {r[3] for rows in target_records.values() for r in rows} == {TIMESTAMP_LOG_APPEND_TIME}
        else:  # everything kept (the timestamp type is the target topic's: CreateTime)
            assert {p: [(*r[:3], r[4]) for r in rows] for p, rows in target_records.items()} == \
                {p: [(*r[:3], r[4]) for r in rows] for p, rows in source_records.items()}, kind

    # v0 records have no timestamp; a v2 record must have one: their copies carry the time they were copied.
    source_v0, target_v0 = read_topic(legacy_source, f"{t['prefix']}.v0", 1), read_topic(target, f"{t['prefix']}.v0", 1)
    assert [r[:3] for r in target_v0[0]] == [r[:3] for r in source_v0[0]] and len(source_v0[0]) == RECORDS
    assert {r[3] for r in source_v0[0]} == {TIMESTAMP_NOT_AVAILABLE}
    assert all(r[3] == TIMESTAMP_CREATE_TIME and r[4] >= copy_started for r in target_v0[0])

    # A checkpoint round, then the group switched: its offsets on the target are the source's, proven.
    checkpoint = _cli("checkpoint", "--plan", str(plan_file), "--once")
    assert checkpoint.returncode == 0, checkpoint.stdout + checkpoint.stderr
    report = tmp_path / "switch.json"
    switched = _cli("switch-group", "--plan", str(plan_file), "--group", t["group"], "--timeout", "60",
                    "--report", str(report))
    assert switched.returncode == 0, switched.stdout + switched.stderr
    wanted = {(t["plain"], q): RECORDS // PARTITIONS // 2 for q in range(PARTITIONS)}
    assert committed_offsets(AdminClient(target.client_config()), t["group"]) == wanted

    # The Spark validation: clean, with the LogAppendTime topic compared without timestamps, and said so.
    status = validate.main(["--plan", str(plan_file), "--report-dir", str(tmp_path / "reports")])
    result = json.loads(next((tmp_path / "reports").glob("validation-*.json")).read_text())
    assert status == 0, result
    assert result["totals"]["source_records"] == 6 * RECORDS + 1
    assert [note for note in result["notes"] if f"{t['prefix']}.v0" in note and "format v0" in note]
    assert [note for note in result["notes"] if t["appendtime"] in note and "LogAppendTime" in note]
    assert not [note for note in result["notes"] if t["plain"] in note]


def _wait_copied(source, target, topics: list[str], partitions: int = PARTITIONS, timeout_s: float = 120) -> None:
    """Until each target partition ends where its source does (no transactions here: offsets match one to one)."""
    deadline = time.monotonic() + timeout_s
    for topic in topics:
        want = end_offsets(source, topic, partitions)
        while (have := end_offsets(target, topic, partitions)) != want:
            assert time.monotonic() < deadline, f"{topic}: {have} of {want} copied"
            time.sleep(0.5)


@pytest.mark.slow
@pytest.mark.parametrize("version", ["2.0.1", "1.1.1"])
def test_the_oldest_sources_sync_configs_acls_and_group_offsets(version, secured_pair, tmp_path):
    """Brokers speaking only old API versions (Kafka 1.1: DescribeAcls v0, no prefixed ACLs; 2.0 with ZooKeeper
    3.5.9's jars on Java 17): configs, ACLs and the group's offsets reach the target, every topic copied exactly."""
    import uuid

    from kafka_local.legacy import start_legacy_cluster

    _source, target = secured_pair
    source = start_legacy_cluster(f"kafka-{version}", tmp_path / "source", version, secured=True)
    try:
        t = load_legacy_topics(source, f"old-{version.replace('.', '-')}-{uuid.uuid4().hex[:6]}",
                               acls="prefixed" if version >= "2.0" else "literal")
        plan_file = _plan_file(tmp_path, source, target, t["prefix"], target_user="admin")
        prepared = _cli("prepare", "--plan", str(plan_file))
        assert prepared.returncode == 0, prepared.stdout + prepared.stderr
        assert "note: topic config message.format.version on 1 topic(s)" in prepared.stdout
        admin = AdminClient(target.client_config())
        synced = {e.name: e.value for e in next(iter(admin.describe_configs(
            [ConfigResource(ConfigResource.Type.TOPIC, t["plain"])]).values())).result().values()}
        assert synced["retention.ms"] == "604800000"
        assert Acl("GROUP", t["group"], "LITERAL", "User:alice", "*", "READ", "ALLOW") in read_acls(admin)
        plan = plan_from_dict(yaml.safe_load(plan_file.read_text()))
        assert Replicator(plan, source.client_config(), target.client_config()).run(
            max_seconds=120, until_caught_up=True).ok
        for kind in ("oldformat", "tsdiff", "v1", "plain"):
            for partition in range(PARTITIONS):
                assert [r.content() for r in read_partition(target, t[kind], partition)] == \
                    [r.content() for r in read_partition(source, t[kind], partition)], (kind, partition)
        switched = _cli("switch-group", "--plan", str(plan_file), "--group", t["group"], "--timeout", "60")
        assert switched.returncode == 0, switched.stdout + switched.stderr
        assert committed_offsets(admin, t["group"]) == {(t["plain"], q): RECORDS // PARTITIONS // 2
                                                        for q in range(PARTITIONS)}
    finally:
        source.stop()


@pytest.mark.slow
def test_a_source_before_0_11_is_copied_and_its_configs_and_acls_are_left_to_do_by_hand(secured_pair, tmp_path):
    """Kafka 0.10.2 answers neither DescribeConfigs nor the ACL API: those syncs are skipped with a sentence naming
    the version and the commands to run by hand; every topic is copied and the group switched exactly."""
    import uuid

    from kafka_local.legacy import start_legacy_cluster

    _source, target = secured_pair
    source = start_legacy_cluster("kafka-0.10", tmp_path / "source", "0.10.2.2", secured=True)
    try:
        t = load_legacy_topics(source, f"old-0-10-{uuid.uuid4().hex[:6]}", acls="none", headers=False)
        plan_file = _plan_file(tmp_path, source, target, t["prefix"], target_user="admin")
        prepared = _cli("prepare", "--plan", str(plan_file))
        assert prepared.returncode == 0, prepared.stdout + prepared.stderr
        for sync, api in (("config sync", "DescribeConfigs"), ("ACL sync", "DescribeAcls")):
            said = [line for line in prepared.stdout.splitlines() if line.startswith(f"note: {sync} skipped")]
            assert said and api in said[0] and "0.11" in said[0] and "kafka-" in said[0], prepared.stdout
        plan = plan_from_dict(yaml.safe_load(plan_file.read_text()))
        assert Replicator(plan, source.client_config(), target.client_config()).run(
            max_seconds=120, until_caught_up=True).ok
        for kind in ("oldformat", "tsdiff", "appendtime", "v1", "plain"):
            source_records, target_records = read_topic(source, t[kind]), read_topic(target, t[kind])
            assert {p: [(*r[:3], r[4]) for r in rows] for p, rows in target_records.items()} == \
                {p: [(*r[:3], r[4]) for r in rows] for p, rows in source_records.items()}, kind
        switched = _cli("switch-group", "--plan", str(plan_file), "--group", t["group"], "--timeout", "60")
        assert switched.returncode == 0, switched.stdout + switched.stderr
        assert committed_offsets(AdminClient(target.client_config()), t["group"]) == \
            {(t["plain"], q): RECORDS // PARTITIONS // 2 for q in range(PARTITIONS)}
    finally:
        source.stop()
