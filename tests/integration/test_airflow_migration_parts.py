"""Airflow parts of the migration apart from a full run: parsing, the lag trigger, the backfill DAG."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path

import pytest
import yaml
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from mirror_engine.engine import Replicator
from mirror_engine.plan import plan_from_dict
from tests.integration.kafka_data import produce, read_partition
from tests.integration.plans import create_topics, plan_dict

pytestmark = [pytest.mark.integration, pytest.mark.airflow]

ROOT = Path(__file__).resolve().parents[2]
DAGS = ROOT / "dags"
NOW = int(time.time() * 1000)


def test_dags_parse_without_contacting_kafka(monkeypatch):
    """Every plan in migrations/ becomes DAGs; a Kafka client built while parsing would fail the parse."""
    import confluent_kafka
    import confluent_kafka.admin

    def no_kafka(*_args, **_kwargs):
        raise AssertionError("a Kafka client was created while parsing DAGs")

    for module, name in ((confluent_kafka, "Consumer"), (confluent_kafka, "Producer"),
                         (confluent_kafka.admin, "AdminClient")):
        monkeypatch.setattr(module, name, no_kafka)
    from airflow.dag_processing.dagbag import DagBag

    started = time.perf_counter()
    bag = DagBag(dag_folder=str(DAGS / "migrations.py"))
    seconds = time.perf_counter() - started
    print(f"parsed dags/migrations.py in {seconds:.2f} s")
    assert bag.import_errors == {}
    plans = sorted(p.stem for p in (ROOT / "migrations").glob("*.yaml"))
    assert len([d for d in bag.dag_ids if d.startswith("kafka_migration__")]) == len(plans)
    assert "kafka_migration_backfill" in bag.dag_ids
    demo = bag.get_dag("kafka_migration__demo")
    assert set(demo.params.keys()) >= {"stages", "dry_run", "max_lag_records", "groups", "producer_topics"}
    assert demo.params["groups"] == ["billing", "shipping"]
    assert demo.doc_md and "switch_groups" in demo.doc_md


def test_lag_trigger_serializes_fires_when_caught_up_and_times_out(kafka_pair, unique_name, tmp_path):
    from kafka_migration.triggers.lag import ReplicationLagTrigger

    source, target = kafka_pair
    topic = f"{unique_name}-lag"
    create_topics(source, [NewTopic(topic, 2, 1)])
    produce(source, topic, [(i % 2, b"k", b"v", None, NOW + i) for i in range(100)])
    plan_file = tmp_path / "plan.yaml"
    data = plan_dict(source, target, topic)
    data["name"] = "lag-trigger"  # its own status topic: no other test's engines in it
    plan_file.write_text(yaml.safe_dump(data))

    async def first_event(trigger: ReplicationLagTrigger) -> dict:
        async for event in trigger.run():
            return event.payload
        raise AssertionError("the trigger ended without an event")

    # Nothing copied yet: it times out, saying which partitions are behind.
    waiting = ReplicationLagTrigger(str(plan_file), max_lag=0, timeout_s=1, poll_interval_s=0.2)
    classpath, kwargs = waiting.serialize()
    rebuilt = ReplicationLagTrigger(**kwargs)
    assert classpath == "kafka_migration.triggers.lag.ReplicationLagTrigger" and rebuilt.serialize() == (classpath,
                                                                                                         kwargs)
    timed_out = asyncio.run(first_event(rebuilt))
    assert timed_out["status"] == "timeout" and timed_out["lag"] == 100 and f"{topic}[0]" in timed_out["behind"]

    def first_event_beside_an_engine() -> dict:
        engine = Replicator(plan_from_dict(data), source.client_config(), target.client_config())
        runner = threading.Thread(target=engine.run, kwargs={"max_seconds": 60}, daemon=True)
        runner.start()
        try:
            return asyncio.run(first_event(ReplicationLagTrigger(str(plan_file), max_lag=0, timeout_s=50,
                                                                poll_interval_s=0.5)))
        finally:
            engine.stop()
            runner.join(60)

    # The engine copies everything: it fires ok.
    assert first_event_beside_an_engine() == {"status": "ok", "lag": 0}

    # Records deleted on the source before they were copied: the engine stops that partition and says so in
    # its status, and the wait fails at once with the engine's reason instead of waiting out its timeout.
    produce(source, topic, [(i % 2, b"k", b"v", None, NOW + i) for i in range(100, 200)])
    admin = AdminClient(source.client_config())
    for future in admin.delete_records([TopicPartition(topic, 0, 75)], request_timeout=30).values():
        future.result()
    failed = first_event_beside_an_engine()
    assert failed["status"] == "failed", failed  # not "timeout": it failed on the engine's report
    assert any(f"{topic}[0]" in problem and "50..74" in problem for problem in failed["problems"]), failed


@pytest.mark.spark
def test_backfill_dag_copies_the_requested_range(kafka_pair, airflow_db, monkeypatch, unique_name, tmp_path):
    from airflow.dag_processing.dagbag import DagBag
    from airflow.utils.state import DagRunState

    source, target = kafka_pair
    topic = f"{unique_name}-range"
    create_topics(source, [NewTopic(topic, 2, 1)])
    produce(source, topic, [(i % 2, f"k{i}".encode(), f"v{i}".encode(), [("i", str(i).encode())], NOW + i)
                            for i in range(400)])
    plans = tmp_path / "plans"
    plans.mkdir()
    data = plan_dict(source, target, topic, name=f"bf{unique_name[-8:]}", backfill={"topics": [topic]})
    plan_file = plans / "bf.yaml"
    plan_file.write_text(yaml.safe_dump(data))
    monkeypatch.setenv("KAFKA_MIGRATION_PLANS", str(plans))
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_LOCAL", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    assert Replicator(plan_from_dict(data), source.client_config(), target.client_config()).run(max_seconds=5).ok

    dag = DagBag(dag_folder=str(DAGS / "migrations.py")).get_dag("kafka_migration_backfill")
    # Only partition 1, from offset 50: the engine copies the rest of partition 1 from the snapshot on.
    run = dag.test(run_conf={"plan": str(plan_file), "topics": topic, "partitions": "1", "from": "50"})
    assert run.state == DagRunState.SUCCESS
    copied = [r.content() for r in read_partition(target, topic, 1)]
    assert copied == [r.content() for r in read_partition(source, topic, 1)][50:]
    assert read_partition(target, topic, 0) == [], "partition 0 was not requested"


def test_checkpoints_in_sync_trigger_waits_for_the_exact_target_offsets(kafka_pair, unique_name, tmp_path):
    from confluent_kafka import Consumer
    from kafka_migration.triggers.checkpoints import CheckpointsInSyncTrigger

    from mirror_engine.checkpoints import Checkpointer

    source, target = kafka_pair
    topic, group = f"{unique_name}-ck", f"{unique_name}-app"
    create_topics(source, [NewTopic(topic, 2, 1)])
    produce(source, topic, [(i % 2, b"k", b"v", None, NOW + i) for i in range(100)])
    consumer = Consumer({**source.client_config(), "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    consumer.subscribe([topic])
    read = 0
    while read < 30:
        read += len([m for m in consumer.consume(10, timeout=1) if m.error() is None])
    consumer.commit(asynchronous=False)
    consumer.close()
    data = plan_dict(source, target, topic)
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(data))
    plan = plan_from_dict(data)
    assert Replicator(plan, source.client_config(), target.client_config()).run(max_seconds=60,
                                                                                until_caught_up=True).ok

    async def first_event(trigger) -> dict:
        async for event in trigger.run():
            return event.payload
        raise AssertionError("no event")

    trigger = CheckpointsInSyncTrigger(str(plan_file), [group], timeout_s=1, poll_interval_s=0.2)
    assert CheckpointsInSyncTrigger(**trigger.serialize()[1]).serialize() == trigger.serialize()
    behind = asyncio.run(first_event(trigger))
    assert behind["status"] == "timeout" and group in behind["behind"]

    checkpointer = Checkpointer(plan, source.client_config(), target.client_config())
    try:
        checkpointer.run_once(sync_offsets=True)
    finally:
        checkpointer.close()
    fired = asyncio.run(first_event(CheckpointsInSyncTrigger(str(plan_file), [group], timeout_s=30)))
    assert fired == {"status": "ok", "groups": [group]}
