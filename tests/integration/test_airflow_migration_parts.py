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

from mirror_engine.plan import plan_from_dict
from mirror_engine.replication import Replicator
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
    from kafka_migration.plan_dags import plan_files, read_plan_file

    started = time.perf_counter()
    bag = DagBag(dag_folder=str(DAGS / "migrations.py"))
    seconds = time.perf_counter() - started
    print(f"parsed dags/migrations.py in {seconds:.2f} s")
    assert bag.import_errors == {}
    # Each YAML plan, and each flow of the MM2 example (its plan src-to-tgt).
    plans = {reference: plan for plan_file in plan_files(ROOT / "migrations")
             for reference, plan in read_plan_file(plan_file).items()}
    assert len([d for d in bag.dag_ids if d.startswith("kafka_migration__")]) == len(plans) == 3
    assert "kafka_migration__src-to-tgt" in bag.dag_ids
    # The way back of each plan under the identity policy (a topic named the same on both clusters).
    identity = sorted(plan.name for plan in plans.values() if plan.replication_policy.type == "identity")
    assert identity and sorted(d.removeprefix("kafka_migration_failback__") for d in bag.dag_ids
                               if d.startswith("kafka_migration_failback__")) == identity
    assert "kafka_migration_backfill" in bag.dag_ids
    demo = bag.get_dag("kafka_migration__demo")
    assert set(demo.params.keys()) >= {"stages", "dry_run", "max_lag_records", "max_lag_s", "groups",
                                       "producer_topics"}
    # The run form's groups are null, meaning the plan's (read when the run starts, not copied into every task);
    # the form's description counts them.
    assert demo.params["groups"] is None
    assert "the plan's cutover.groups (2 group(s))" in demo.params.get_param("groups").description
    assert demo.doc_md and "switch_groups" in demo.doc_md


async def _first_event(trigger) -> dict:
    async for event in trigger.run():
        await trigger.cleanup()
        return event.payload
    raise AssertionError("the trigger ended without an event")


def test_lag_trigger_serializes_fires_when_caught_up_and_times_out(kafka_pair, unique_name, tmp_path):
    from kafka_migration.triggers.readiness import ReadinessTrigger

    source, target = kafka_pair
    topic = f"{unique_name}-lag"
    create_topics(source, [NewTopic(topic, 2, 1)])
    produce(source, topic, [(i % 2, b"k", b"v", None, NOW + i) for i in range(100)])
    plan_file = tmp_path / "plan.yaml"
    data = plan_dict(source, target, topic)
    data["name"] = "lag-trigger"  # its own status topic: no other test's engines in it
    plan_file.write_text(yaml.safe_dump(data))

    def lag_trigger(timeout_s: float) -> ReadinessTrigger:
        return ReadinessTrigger(str(plan_file), "lag_at_most", {"max_lag": 0}, time.time() + timeout_s, 0.2)

    # Nothing copied yet: it times out, saying how far behind and which partitions.
    waiting = lag_trigger(1)
    classpath, kwargs = waiting.serialize()
    rebuilt = ReadinessTrigger(**kwargs)
    assert classpath == "kafka_migration.triggers.readiness.ReadinessTrigger"
    assert rebuilt.serialize() == (classpath, kwargs)
    timed_out = asyncio.run(_first_event(rebuilt))
    assert timed_out["status"] == "timeout", timed_out
    assert "now 100 record(s)" in timed_out["progress"] and f"{topic}[0] 50" in timed_out["progress"]

    def first_event_beside_an_engine() -> dict:
        engine = Replicator(plan_from_dict(data), source.client_config(), target.client_config())
        runner = threading.Thread(target=engine.run, kwargs={"max_seconds": 60}, daemon=True)
        runner.start()
        try:
            return asyncio.run(_first_event(lag_trigger(50)))
        finally:
            engine.stop()
            runner.join(60)

    # The engine copies everything: it fires ok.
    fired = first_event_beside_an_engine()
    assert fired["status"] == "ok" and fired["detail"] == {"lag": 0, "behind_s": 0.0}, fired

    # Records deleted on the source before they were copied: the engine stops that partition and says so in
    # its status, and the wait fails at once with the engine's reason instead of waiting out its timeout.
    produce(source, topic, [(i % 2, b"k", b"v", None, NOW + i) for i in range(100, 200)])
    admin = AdminClient(source.client_config())
    for future in admin.delete_records([TopicPartition(topic, 0, 75)], request_timeout=30).values():
        future.result()
    failed = first_event_beside_an_engine()
    assert failed["status"] == "failed", failed  # not "timeout": it failed on the engine's report
    assert f"{topic}[0]" in failed["reason"] and "50..74" in failed["reason"], failed


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


def test_checkpoints_trigger_syncs_groups_until_current_on_the_target(kafka_pair, unique_name, tmp_path):
    from confluent_kafka import Consumer
    from kafka_migration.triggers.readiness import ReadinessTrigger

    from mirror_engine.kafka import committed_offsets

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
    on_source = committed_offsets(AdminClient(source.client_config()), group)
    data = plan_dict(source, target, topic, groups={"include": [f"{unique_name}-.*"]})
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(data))

    def trigger(timeout_s: float) -> ReadinessTrigger:
        return ReadinessTrigger(str(plan_file), "checkpoints_current", {}, time.time() + timeout_s, 0.2)

    # Not copied yet: the group cannot be current, and the wait says so.
    behind = asyncio.run(_first_event(trigger(1)))
    assert behind["status"] == "timeout" and group in behind["progress"] and "not copied" in behind["progress"]

    plan = plan_from_dict(data)
    assert Replicator(plan, source.client_config(), target.client_config()).run(max_seconds=60,
                                                                                until_caught_up=True).ok
    fired = asyncio.run(_first_event(trigger(30)))
    assert fired["status"] == "ok" and group in fired["detail"]["current"], fired
    # Identity naming, no gaps: the exact translation is the same offsets.
    assert committed_offsets(AdminClient(target.client_config()), group) == on_source


def test_a_bad_plan_costs_only_its_own_dag(monkeypatch, tmp_path):
    """Unreadable, hostile, badly scheduled and same-named plans each get a DAG that names their problem; the
    good plan's DAGs and the shared DAGs are all there, and parsing takes seconds, not a timeout."""
    from airflow.dag_processing.dagbag import DagBag

    plans = tmp_path / "plans"
    plans.mkdir()
    good = {"name": "good", "source": {"alias": "src", "bootstrap_servers": "127.0.0.1:1"},
            "target": {"alias": "tgt", "bootstrap_servers": "127.0.0.1:2"}, "topics": {"include": ["orders"]}}
    (plans / "good.yaml").write_text(yaml.safe_dump(good))
    (plans / "binary.yaml").write_bytes(bytes(range(256)) * 64)
    (plans / "nested.yaml").write_text("a: " + "[" * 100_000 + "]" * 100_000)
    laughs = ["a: &a [x, x, x, x, x, x, x, x, x]"] + [
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
        f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]" for i in range(9)]
    (plans / "laughs.yaml").write_text("\n".join(laughs) + "\n")
    (plans / "badcron.yaml").write_text(yaml.safe_dump({**good, "name": "badcron", "schedule": "every day at 9"}))
    (plans / "twin-a.yaml").write_text(yaml.safe_dump({**good, "name": "twin"}))
    (plans / "twin-b.yaml").write_text(yaml.safe_dump({**good, "name": "twin"}))
    monkeypatch.setenv("KAFKA_MIGRATION_PLANS", str(plans))

    started = time.perf_counter()
    bag = DagBag(dag_folder=str(DAGS / "migrations.py"))
    seconds = time.perf_counter() - started
    print(f"parsed 7 plans, 6 of them bad, in {seconds:.2f} s")
    assert bag.import_errors == {}
    assert seconds < 20
    for dag_id in ("kafka_migration__good", "kafka_migration_validate__good", "kafka_migration_backfill",
                   "kafka_migration_flow_control"):
        assert dag_id in bag.dag_ids, dag_id
    problems = {stem: bag.get_dag(f"kafka_migration__{stem}").doc_md
                for stem in ("binary", "nested", "laughs", "badcron", "twin-a", "twin-b")}
    for stem, doc in problems.items():
        assert "does not validate" in doc and f"{stem}.yaml" in doc, (stem, doc)
        assert "Traceback" not in doc, (stem, doc)
    assert "schedule" in problems["badcron"]
    assert "twin-b.yaml" in problems["twin-a"] and "twin-a.yaml" in problems["twin-b"]
    assert "kafka_migration__twin" not in bag.dag_ids
    assert [t.task_id for t in bag.get_dag("kafka_migration__badcron").tasks] == ["preflight.check"]
