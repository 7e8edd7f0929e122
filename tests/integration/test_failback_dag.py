"""The way back's DAG (`kafka_migration_failback__<plan>`), generated beside the migration's and run with dag.test()
against the real clusters: after a cutover and writes on the target, it copies them back and moves the group and
the producers back, exactly."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
import yaml
from confluent_kafka.admin import NewTopic

from mirror_engine.cutover import GroupSwitcher, switch_producers
from mirror_engine.kafka import admin_client, existing_topics
from mirror_engine.plan import plan_from_dict
from mirror_engine.replication import Replicator
from tests.integration.kafka_data import produce, read_as_group, read_partition
from tests.integration.plans import create_topics, plan_dict

pytestmark = [pytest.mark.integration, pytest.mark.airflow]

DAGS = Path(__file__).resolve().parents[2] / "dags"
NOW = int(time.time() * 1000)


def test_the_failback_dag_copies_back_what_the_target_received_and_moves_group_and_producers_back(
        kafka_pair, monkeypatch, tmp_path, airflow_db, unique_name):
    from airflow.dag_processing.dagbag import DagBag
    from airflow.utils.state import DagRunState, TaskInstanceState

    source, target = kafka_pair
    sc, tc = source.client_config(), target.client_config()
    topic, group = f"{unique_name}-orders", f"{unique_name}-billing"
    plans = tmp_path / "plans"
    plans.mkdir()
    monkeypatch.setenv("KAFKA_MIGRATION_PLANS", str(plans))
    create_topics(source, [NewTopic(topic, 2, 1)])
    produce(source, topic, [(i % 2, b"k%d" % i, b"source-%d" % i, [("h", b"s")], NOW + i) for i in range(300)])
    data = plan_dict(source, target, topic, name=f"fbdag{unique_name[-8:]}", engine={"refresh_interval_s": 2},
                     cutover={"groups": [group], "producer_topics": [topic], "producer_idle_s": 1,
                              "wait_timeout_s": 180})
    (plans / "shop.yaml").write_text(yaml.safe_dump(data))
    plan = plan_from_dict(data)

    # The way there, done by hand: the group read part of the source, then it and the producers switched.
    first = read_as_group(sc, group, topic, {0: 50, 1: 70})
    replicator = Replicator(plan, sc, tc)
    runner = threading.Thread(target=replicator.run, kwargs={"max_seconds": 240}, daemon=True)
    runner.start()
    try:
        deadline = time.monotonic() + 60
        while not existing_topics(admin_client(tc), [topic]):
            assert time.monotonic() < deadline, "the forward engine created no target topic"
            time.sleep(0.2)
        assert GroupSwitcher(plan, sc, tc).switch(group, timeout_s=120).ok
        switch_producers(plan, sc, tc, topic, idle_s=1, timeout_s=120)
    finally:
        replicator.stop()
        runner.join(60)
    produce(target, topic, [(i % 2, b"t%d" % i, b"target-%d" % i, None, NOW + 10_000 + i) for i in range(600)])
    on_target = read_as_group(tc, group, topic, {0: 200, 1: 150})

    bag = DagBag(dag_folder=str(DAGS))
    assert bag.import_errors == {}, bag.import_errors
    dag = bag.get_dag(f"kafka_migration_failback__{plan.name}")
    assert dag.params["producer_topics"] == [topic]
    run = dag.test()
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert run.state == DagRunState.SUCCESS, states
    for task_id in ("preflight.clusters_answer", "preflight.check", "prepare.apply", "replicate.start",
                    "replicate.engine_copying", "catch_up.wait_for_lag", "switch_groups.switch",
                    "switch_producers.ready", "switch_producers.switch", "finish.stop_engine"):
        assert states[task_id] == TaskInstanceState.SUCCESS, (task_id, states)
    prepared = json.dumps(run.get_task_instance("prepare.apply").xcom_pull(task_ids="prepare.apply"))
    assert '"records_back": 600' in prepared, prepared

    # The cockpit's pages of the way back (`<plan>-failback`) read its flow: the group and the topic switched back.
    from kafka_migration.cockpit.views import Views

    shown = Views().run(f"{plan.name}-failback", lambda view: view.cutover())
    assert shown["plan"] == f"{plan.name}-failback"
    assert [(row["group"], row["state"]) for row in shown["groups"]] == [(group, "switched")]
    assert [(row["topic"], row["state"]) for row in shown["topics"]] == [(topic, "switched")]

    # Every record of both clusters on the source once, in order; the group on at its next record there.
    after = read_as_group(sc, group, topic, {0: None, 1: None})
    for p in (0, 1):
        whole = [r.content() for r in read_partition(source, topic, p)]
        assert whole == [r.content() for r in read_partition(target, topic, p)] and len(whole) == 450
        assert first[p] + on_target[p] + after[p] == whole, f"partition {p}"
