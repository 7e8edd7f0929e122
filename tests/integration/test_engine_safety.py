"""The engine on real clusters when the source loses or replaces data, and with a least-privilege source principal."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ConfigResource,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from kafka_local.cluster import KafkaCluster
from mirror_engine.kafka import Acl, read_acls
from mirror_engine.plan import plan_from_dict
from mirror_engine.replication import Replicator
from tests.integration.kafka_data import produce, read_partition
from tests.integration.plans import cluster_section, create_topics, make_plan, plan_dict

pytestmark = pytest.mark.integration

# Recent timestamps: records older than the brokers' 7-day retention would be deleted under the test.
BASE_TS = int(time.time() * 1000) - 600_000


def _records(partition: int, start: int, stop: int) -> list[tuple]:
    """(partition, key, value, headers, timestamp) for records numbered start..stop-1."""
    return [(partition, f"k{i % 7}".encode(), f"v{i}".encode(), [("n", str(i).encode())], BASE_TS + i)
            for i in range(start, stop)]


def _content(records: list[tuple]) -> list[tuple]:
    """What `Record.content()` of each copied record must be."""
    return [(key, value, tuple(headers or ()), ts) for _p, key, value, headers, ts in records]


def _copied(target: KafkaCluster, topic: str, partition: int) -> list[tuple]:
    return [r.content() for r in read_partition(target, topic, partition)]


def _run(plan, source: KafkaCluster, target: KafkaCluster, user: str | None = None):
    replicator = Replicator(plan, source.client_config(user), target.client_config())
    summary = replicator.run(max_seconds=120, until_caught_up=True)
    return replicator, summary


def _delete_records_before(cluster: KafkaCluster, topic: str, partition: int, offset: int) -> None:
    admin = AdminClient(cluster.client_config())
    futures = admin.delete_records([TopicPartition(topic, partition, offset)], request_timeout=30)
    for future in futures.values():
        assert future.result().low_watermark == offset


def _copy_then_lose_records(kafka_pair, topic: str, **sections):
    """Copy records 0..99; produce 100..199; delete 0..149 on the source (100..149 never copied)."""
    source, target = kafka_pair
    create_topics(source, [NewTopic(topic, 1, 1)])
    produce(source, topic, _records(0, 0, 100))
    plan = make_plan(source, target, topic, **sections)
    _replicator, first = _run(plan, source, target)
    assert first.ok, first.failed_partitions
    assert first.records == 100
    assert _copied(target, topic, 0) == _content(_records(0, 0, 100))

    produce(source, topic, _records(0, 100, 200))
    _delete_records_before(source, topic, 0, 150)
    return plan


def test_records_deleted_on_the_source_before_copy_stop_the_partition_loudly(kafka_pair, unique_name):
    source, target = kafka_pair
    plan = _copy_then_lose_records(kafka_pair, unique_name)

    replicator, summary = _run(plan, source, target)

    key = f"{unique_name}[0]"
    assert not summary.ok, "records 100..149 were lost on the source, yet the run reports success"
    assert list(summary.failed_partitions) == [key], summary.failed_partitions
    reason = summary.failed_partitions[key]
    assert "100..149" in reason, f"the reason does not name the lost range 100..149: {reason!r}"
    assert replicator.states[(unique_name, 0)].failed == reason
    assert summary.records == 0
    # Nothing from 150 on was written behind the hole.
    assert _copied(target, unique_name, 0) == _content(_records(0, 0, 100))


def test_allow_gaps_skips_the_lost_range_and_copies_the_rest(kafka_pair, unique_name):
    source, target = kafka_pair
    plan = _copy_then_lose_records(kafka_pair, unique_name, engine={"allow_gaps": True})

    _replicator, summary = _run(plan, source, target)

    assert summary.ok, summary.failed_partitions
    assert summary.records == 50
    expected = _content(_records(0, 0, 100)) + _content(_records(0, 150, 200))
    assert _copied(target, unique_name, 0) == expected


def _wait_for_acls(admin: AdminClient, wanted: set[Acl], timeout_s: float = 15.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        present = read_acls(admin) or frozenset()
        if wanted <= present:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"ACLs not visible after {timeout_s:.0f} s: {sorted(wanted - present)}")
        time.sleep(0.2)


def test_engine_runs_with_a_source_principal_that_may_only_read_and_describe(secured_pair, unique_name):
    source, target = secured_pair
    topic = unique_name
    create_topics(source, [NewTopic(topic, 2, 1)])
    produce(source, topic, [(i % 2, *rest) for i, (_p, *rest) in enumerate(_records(0, 0, 200))])

    admin = AdminClient(source.client_config())
    bindings = [
        AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:mirror", "*", operation,
                   AclPermissionType.ALLOW)
        for operation in (AclOperation.READ, AclOperation.DESCRIBE)
    ]
    for future in admin.create_acls(bindings, request_timeout=15).values():
        future.result()
    _wait_for_acls(admin, {Acl.from_binding(binding) for binding in bindings})
    # The principal really is restricted: it may not even read the topic's configs.
    mirror_admin = AdminClient(source.client_config("mirror"))  # kept alive until the future resolves
    configs = mirror_admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, topic)], request_timeout=15)
    with pytest.raises(KafkaException, match="Topic authorization failed"):
        next(iter(configs.values())).result()

    data = plan_dict(source, target, topic)
    data["source"] = cluster_section("src", source, "mirror")
    plan = plan_from_dict(data)
    try:
        _replicator, summary = _run(plan, source, target, user="mirror")
    except Exception as error:  # a denied call surfaces as an exception naming it
        pytest.fail(f"the engine needs more than READ and DESCRIBE on the source topic: {error!r}")

    assert summary.ok, f"the engine needs more than READ and DESCRIBE on the source: {summary.failed_partitions}"
    for partition in range(2):
        expected = [r.content() for r in read_partition(source, topic, partition)]
        assert len(expected) == 100
        assert _copied(target, topic, partition) == expected, f"{topic}[{partition}]"


def _recreate_topic(cluster: KafkaCluster, topic: str, partitions: int, timeout_s: float = 60.0) -> None:
    admin = AdminClient(cluster.client_config())
    admin.delete_topics([topic], operation_timeout=30)[topic].result()
    deadline = time.monotonic() + timeout_s
    while topic in admin.list_topics(timeout=5).topics:
        assert time.monotonic() < deadline, f"{topic} still listed {timeout_s:.0f} s after its deletion"
        time.sleep(0.2)
    while True:  # the broker may still be removing the old topic's log
        try:
            create_topics(cluster, [NewTopic(topic, partitions, 1)])
            return
        except KafkaException as error:
            if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS or time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def test_topic_recreated_on_the_source_stops_its_partitions(kafka_pair, unique_name):
    source, target = kafka_pair
    topic = unique_name
    create_topics(source, [NewTopic(topic, 2, 1)])
    first_records = [(i % 2, *rest) for i, (_p, *rest) in enumerate(_records(0, 0, 60))]
    produce(source, topic, first_records)
    plan = make_plan(source, target, topic)
    _replicator, first = _run(plan, source, target)
    assert first.ok, first.failed_partitions
    copied_before = {p: _copied(target, topic, p) for p in range(2)}
    assert [len(copied_before[p]) for p in range(2)] == [30, 30]

    _recreate_topic(source, topic, 2)
    produce(source, topic, [(i % 2, b"new", f"new-{i}".encode(), None, BASE_TS + 10_000 + i) for i in range(6)])

    replicator, summary = _run(plan, source, target)

    assert not summary.ok, "the source topic was recreated, yet the run reports success"
    assert sorted(summary.failed_partitions) == [f"{topic}[0]", f"{topic}[1]"], summary.failed_partitions
    for key, reason in summary.failed_partitions.items():
        assert "recreated" in reason or "truncated" in reason, f"{key}: the reason does not say why: {reason!r}"
    assert summary.records == 0
    for p in range(2):
        assert replicator.states[(topic, p)].failed
        assert _copied(target, topic, p) == copied_before[p], f"new records were copied into {topic}[{p}]"
