"""The migration DAG, generated from a plan file and run with dag.test() against the real clusters and Spark."""

from __future__ import annotations

import json
import os
import threading
import time
from collections import defaultdict
from pathlib import Path

import pytest
import yaml
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.kafka_data import produce, read_partition
from tests.integration.plans import create_topics, plan_dict

pytestmark = [pytest.mark.integration, pytest.mark.airflow, pytest.mark.spark]

DAGS = Path(__file__).resolve().parents[2] / "dags"
NOW = int(time.time() * 1000)


@pytest.fixture
def migration_env(monkeypatch, tmp_path, airflow_db):
    plans = tmp_path / "plans"
    plans.mkdir()
    monkeypatch.setenv("KAFKA_MIGRATION_PLANS", str(plans))
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_LOCAL", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    return plans


def _load_dag(dag_id: str):
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(DAGS))
    assert bag.import_errors == {}, bag.import_errors
    return bag.get_dag(dag_id)


class SourceTraffic:
    """A producer writing to a topic and a consumer group reading it on the source, for a while."""

    def __init__(self, config: dict, topic: str, group: str, seconds: float) -> None:
        self.config, self.topic, self.group, self.seconds = config, topic, group, seconds
        self.read: dict[int, list[tuple]] = defaultdict(list)
        self.threads = [threading.Thread(target=self._produce, daemon=True),
                        threading.Thread(target=self._consume, daemon=True)]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def join(self) -> None:
        for thread in self.threads:
            thread.join(120)

    def _produce(self) -> None:
        producer = Producer({**self.config, "linger.ms": 5})
        deadline, i = time.monotonic() + self.seconds, 0
        while time.monotonic() < deadline:
            producer.produce(self.topic, f"live-{i}".encode(), f"k{i % 13}".encode(), i % 3,
                             headers=[("i", str(i).encode())])
            i += 1
            if i % 20 == 0:
                producer.flush(10)
                time.sleep(0.1)
        producer.flush(30)

    def _consume(self) -> None:
        consumer = Consumer({**self.config, "group.id": self.group, "enable.auto.commit": False,
                             "auto.offset.reset": "earliest"})
        consumer.subscribe([self.topic])
        deadline = time.monotonic() + self.seconds * 0.6
        while time.monotonic() < deadline:
            for message in consumer.consume(50, timeout=0.5):
                if message.error() is None:
                    self.read[message.partition()].append(_content(message))
            if self.read:
                consumer.commit(asynchronous=False)
            time.sleep(0.2)  # a slow application: it stays behind the producer
        consumer.close()


def _content(message) -> tuple:
    return (message.key(), message.value(), tuple(message.headers() or ()), message.timestamp()[1])


def test_full_migration_dag_moves_data_and_groups_exactly(kafka_pair, migration_env, unique_name):
    from airflow.utils.state import DagRunState, TaskInstanceState

    source, target = kafka_pair
    p = f"{unique_name}-"
    orders, customers, group = p + "orders", p + "customers", p + "billing"
    create_topics(source, [NewTopic(orders, 3, 1),
                           NewTopic(customers, 1, 1, config={"cleanup.policy": "compact"})])
    produce(source, orders, [(i % 3, f"k{i % 13}".encode(), f"order-{i}".encode(), [("v", b"1")], NOW + i)
                             for i in range(3000)])
    produce(source, customers, [(0, f"c{i % 50}".encode(), f"customer-{i}".encode(), None, NOW + i)
                                for i in range(500)])
    data = plan_dict(source, target, p, name=f"dagtest{unique_name[-8:]}",
                     cutover={"groups": [group], "producer_idle_s": 2, "wait_timeout_s": 240},
                     engine={"refresh_interval_s": 2})
    (migration_env / "shop.yaml").write_text(yaml.safe_dump(data))

    traffic = SourceTraffic(source.client_config(), orders, group, seconds=25)
    traffic.start()
    dag = _load_dag(f"kafka_migration__{data['name']}")
    run = dag.test(run_conf={"producer_topics": [orders]})
    traffic.join()
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert run.state == DagRunState.SUCCESS, states
    for task_id in ("preflight.clusters_answer", "preflight.check", "prepare.apply", "replicate.start",
                    "replicate.engine_copying", "catch_up.wait_for_lag", "validate.records", "checkpoints.current",
                    "switch_groups.switch", "switch_producers.ready",
                    "switch_producers.switch", "finish.stop_engine"):
        assert states[task_id] == TaskInstanceState.SUCCESS, (task_id, states)
    for task_id in ("backfill.history", "backfill.done"):  # the plan names no backfill topics
        assert states[task_id] == TaskInstanceState.SKIPPED, (task_id, states)
    assert not [task_id for task_id in states if task_id.startswith("switch_groups.fence")]  # fenced in the switch

    reports = sorted((Path(os.environ["AIRFLOW_HOME"]) / "reports").glob(f"validation-{data['name']}-*.json"))
    report = json.loads(reports[-1].read_text())
    assert report["clean"] and report["totals"]["source_records"] >= 3500

    # The group resumes on the target exactly where it stopped on the source.
    consumer = Consumer({**target.client_config(), "group.id": group, "enable.auto.commit": False,
                         "enable.partition.eof": True})
    consumer.subscribe([orders])
    on_target: dict[int, list[tuple]] = defaultdict(list)
    at_end: set[int] = set()
    deadline = time.monotonic() + 60
    while len(at_end) < 3 and time.monotonic() < deadline:
        for message in consumer.consume(500, timeout=0.5):
            if message.error() is not None:
                if message.error().code() == KafkaError._PARTITION_EOF:
                    at_end.add(message.partition())
                continue
            at_end.discard(message.partition())
            on_target[message.partition()].append(_content(message))
    consumer.close()
    for partition in range(3):
        expected = [r.content() for r in read_partition(source, orders, partition)]
        assert traffic.read[partition] + on_target[partition] == expected, f"{orders}[{partition}]"
        assert [r.content() for r in read_partition(target, orders, partition)] == expected


def test_bad_plan_fails_in_preflight_and_creates_nothing(kafka_pair, migration_env, unique_name):
    from airflow.utils.state import DagRunState, TaskInstanceState

    source, target = kafka_pair
    p = f"{unique_name}-"
    create_topics(source, [NewTopic(p + "orders", 2, 1)])
    data = plan_dict(source, target, p, name="badplan")
    data["sync"] = {"acls": "yes please"}
    (migration_env / "badplan.yaml").write_text(yaml.safe_dump(data))
    before = set(AdminClient(target.client_config()).list_topics(timeout=10).topics)

    dag = _load_dag("kafka_migration__badplan")
    assert "does not validate" in dag.doc_md
    run = dag.test()
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert run.state == DagRunState.FAILED
    assert states == {"preflight.check": TaskInstanceState.FAILED}  # the one task of a plan that cannot run
    assert set(AdminClient(target.client_config()).list_topics(timeout=10).topics) == before


def test_an_mm2_files_flow_runs_as_a_migration_dag_and_switches_its_group_exactly(kafka_pair, migration_env,
                                                                                   unique_name):
    """An MM2 file in the plans folder: its flow's DAG (named after the flow's plan, `a-to-b`) copies into MM2's
    remote topics, and every task reads the same flow again (the started worker with `--mm2-config --flow`)."""
    from airflow.utils.state import DagRunState, TaskInstanceState

    from mirror_engine.kafka import commit_offsets, committed_offsets

    source, target = kafka_pair
    alias = f"m{unique_name[-6:]}"
    orders, group = f"{unique_name}-orders", f"{unique_name}-billing"
    create_topics(source, [NewTopic(orders, 3, 1)])
    produce(source, orders, [(i % 3, f"k{i}".encode(), f"order-{i}".encode(), None, NOW + i) for i in range(600)])
    commit_offsets(AdminClient(source.client_config()), group, {(orders, 0): 10, (orders, 1): 150, (orders, 2): 0})
    (migration_env / "mm2.properties").write_text("\n".join([
        f"clusters = {alias}, t{alias}", f"{alias}.bootstrap.servers = {source.bootstrap}",
        f"t{alias}.bootstrap.servers = {target.bootstrap}", f"{alias}->t{alias}.enabled = true",
        f"topics = {unique_name}-.*", "sync.topic.acls.enabled = false", "refresh.topics.interval.seconds = 2",
        "replication.factor = 1", *(f"{name}.replication.factor = 1" for name in
                                    ("checkpoints.topic", "heartbeats.topic", "offset-syncs.topic")), ""]))

    dag = _load_dag(f"kafka_migration__{alias}-to-t{alias}")
    stages = ["preflight", "prepare", "replicate", "catch_up", "checkpoints", "switch_groups", "finish"]
    run = dag.test(run_conf={"stages": stages, "groups": [group], "wait_timeout_s": 240})
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert run.state == DagRunState.SUCCESS, states
    for task_id in ("prepare.apply", "replicate.start", "replicate.engine_copying", "switch_groups.switch",
                    "finish.stop_engine"):
        assert states[task_id] == TaskInstanceState.SUCCESS, (task_id, states)
    remote = f"{alias}.{orders}"
    for partition in range(3):
        assert [r.content() for r in read_partition(target, remote, partition)] == [
            r.content() for r in read_partition(source, orders, partition)], f"{remote}[{partition}]"
    assert committed_offsets(AdminClient(target.client_config()), group) == {
        (remote, 0): 10, (remote, 1): 150, (remote, 2): 0}
