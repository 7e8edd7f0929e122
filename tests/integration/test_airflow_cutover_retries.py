"""Every cutover task is safe to retry, under the real scheduler, LocalExecutor and triggerer.

One migration run on a source with an authorizer (so that its groups can be fenced): the process running
`switch_groups.switch[g]` (which fences its groups, then switches them), then `switch_producers.switch[t]`, is
killed with SIGKILL as soon as Airflow shows it running (wherever it is in its work), and Airflow retries it; the
scheduler is restarted while the killed group switch waits for its retry. The run ends exact: the group's
offsets on the target are the exact translation of those on the source (identity naming, an empty target: the
same offsets), each task's report is the one proof stored, and the topic is switched with nothing left behind on
the source.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
import uuid
from collections.abc import Iterator

import pytest
import yaml
from confluent_kafka.admin import AdminClient, NewTopic

from mirror_engine.kafka import committed_offsets, group_fence, read_acls
from mirror_engine.observe import ReportStore
from mirror_engine.plan import load_plan
from tests.integration.airflow_services import ROOT, AirflowServices
from tests.integration.kafka_data import produce
from tests.integration.plans import create_topics
from tests.integration.test_cutover_retries import _read_and_commit

pytestmark = [pytest.mark.integration, pytest.mark.airflow]

NOW = int(time.time() * 1000)
STAGES = ["preflight", "prepare", "replicate", "catch_up", "switch_groups", "switch_producers", "finish"]


def _connection(cluster) -> str:
    config = cluster.client_config()
    extra = {k: v for k, v in config.items() if k not in ("sasl.username", "sasl.password")}
    return json.dumps({"conn_type": "kafka", "login": config["sasl.username"], "password": config["sasl.password"],
                       "extra": extra})


@pytest.fixture(scope="module")
def secured_airflow(secured_pair, tmp_path_factory) -> Iterator[tuple[AirflowServices, str, str]]:
    source, target = secured_pair
    suffix = uuid.uuid4().hex[:8]
    base = tmp_path_factory.mktemp("airflow-retries")
    plans, dags = base / "plans", base / "dags"
    plans.mkdir()
    dags.mkdir()
    plan_name, prefix = f"retry{suffix}", f"retry-{suffix}-"
    plan_file = plans / f"{plan_name}.yaml"
    plan_file.write_text(yaml.safe_dump({
        "name": plan_name,
        "source": {"alias": "src", "conn_id": "kafka_source"},
        "target": {"alias": "tgt", "conn_id": "kafka_target"},
        "topics": {"include": [f"{prefix}.*"]},
        "groups": {"include": [f"{prefix}.*"]},
        "engine": {"refresh_interval_s": 2, "status_interval_s": 1},
        "cutover": {"producer_idle_s": 2, "wait_timeout_s": 300, "catch_up_settle_s": 2},
    }))
    (dags / "migrations.py").symlink_to(ROOT / "dags" / "migrations.py")
    services = AirflowServices(base / "airflow", dags, {
        "KAFKA_MIGRATION_PLANS": str(plans),
        "AIRFLOW_CONN_KAFKA_SOURCE": _connection(source),
        "AIRFLOW_CONN_KAFKA_TARGET": _connection(target),
        # A task whose process was lost with the scheduler is found within seconds, not 5 minutes.
        "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": "30",
    })
    try:
        services.start()
        services.wait_for_dag(f"kafka_migration__{plan_name}")
        yield services, str(plan_file), prefix
    finally:
        services.stop()
        pid_file = base / "airflow" / "mirror-engine" / f"{plan_name}.pid"
        if pid_file.exists():  # a run failed before its finish stage stopped the engine
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid_file.read_text()), signal.SIGTERM)


def _kill_when_running(services: AirflowServices, dag_id: str, run_id: str, task_id: str, timeout_s: float) -> dict:
    """SIGKILL the process of the task's first try as soon as Airflow shows it running; its TI as then."""
    deadline = time.monotonic() + timeout_s
    while True:
        ti = next((ti for ti in services.task_instances(dag_id, run_id) if ti["task_id"] == task_id
                   and ti["map_index"] == 0), None)
        if ti is not None and ti["state"] == "running" and ti.get("pid"):
            os.kill(ti["pid"], signal.SIGKILL)
            return ti
        assert ti is None or ti["state"] not in ("success", "failed"), f"{task_id} ended before it was killed: {ti}"
        assert services.run_state(dag_id, run_id) in ("queued", "running"), services.task_instances(dag_id, run_id)
        assert time.monotonic() < deadline, f"{task_id} never ran: {ti}"
        time.sleep(0.1)


def test_cutover_tasks_killed_mid_task_are_retried_and_end_exact(secured_pair, secured_airflow):
    source, target = secured_pair
    services, plan_file, prefix = secured_airflow
    plan = load_plan(plan_file)
    dag_id = f"kafka_migration__{plan.name}"
    topic, group = prefix + "orders", prefix + "billing"
    create_topics(source, [NewTopic(topic, 3, 1)])
    produce(source, topic, [(i % 3, f"k{i % 7}".encode(), f"order-{i}".encode(), [("h", b"1")], NOW + i)
                            for i in range(3000)])
    _read_and_commit(source.client_config(), group, topic, 1200)  # the application stopped part-way
    run_id = services.trigger(dag_id, {"stages": STAGES, "groups": [group], "producer_topics": [topic],
                                       "fence": True, "producer_idle_s": 2, "wait_timeout_s": 300})
    killed = [_kill_when_running(services, dag_id, run_id, "switch_groups.switch", 600)["task_id"]]
    services.stop_component("scheduler")  # the switch is waiting for its retry
    services.start_component("scheduler")
    killed.append(_kill_when_running(services, dag_id, run_id, "switch_producers.switch", 600)["task_id"])
    state = services.wait_for_run(dag_id, run_id, 600)
    tis = {ti["task_id"]: ti for ti in services.task_instances(dag_id, run_id)}
    assert state == "success", ({t: (ti["state"], ti["try_number"]) for t, ti in tis.items()},
                                services.log_tail("scheduler"))
    for task_id in killed:
        assert tis[task_id]["try_number"] >= 2 and tis[task_id]["state"] == "success", tis[task_id]

    # Exact: the group's offsets on the target are its source offsets; the fence is in force; one proof each.
    assert committed_offsets(AdminClient(target.client_config()), group) == committed_offsets(
        AdminClient(source.client_config()), group)
    assert group_fence(group) in (read_acls(AdminClient(source.client_config())) or frozenset())
    store = ReportStore(plan, target.client_config())
    try:
        switched = store.read("group-switch")[f"group-switch:{group}"]["report"]
        producers = store.read("producer-switch")[f"producer-switch:{topic}"]["report"]
    finally:
        store.close()
    assert switched["ok"] and switched["fenced"], switched
    assert {(r["topic"], r["partition"]): r["target_offset"] for r in switched["partitions"]} == committed_offsets(
        AdminClient(target.client_config()), group)
    assert producers["copied"] == producers["end_offsets"] == {"0": 1000, "1": 1000, "2": 1000}, producers
