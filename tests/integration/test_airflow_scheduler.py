"""The migration DAG run by the real scheduler, LocalExecutor and triggerer, triggered through the REST API.

What `dag.test()` hides is checked here: every sensor defers to the triggerer and survives a triggerer
restart mid-wait; the engine a task starts leaves its executor slot at once; mapped tasks carry their
outlets, so the switched group's Asset event is recorded and a DAG scheduled on it runs. The trigger forms
are used in a real browser: the backfill DAG starts from its form with only its plan chosen.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

from mirror_engine.kafka import committed_offsets
from mirror_engine.observe import ReportStore
from mirror_engine.plan import load_plan
from tests.integration.airflow_services import REPORTS, ROOT, AirflowServices
from tests.integration.kafka_data import produce
from tests.integration.plans import create_topics

pytestmark = [pytest.mark.integration, pytest.mark.airflow, pytest.mark.spark]

NOW = int(time.time() * 1000)
SENSORS = ("preflight.clusters_answer", "replicate.engine_copying", "catch_up.wait_for_lag", "checkpoints.current",
           "switch_groups.switch", "switch_producers.ready")  # switch_groups.switch waits for its groups, deferred

DEPLOY_DAG = '''
import pendulum
from airflow.sdk import DAG, task
from kafka_migration.operators.migration import group_asset

with DAG("deploy_{group_id}", schedule=[group_asset("{plan}", "{group}")],
         start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), catchup=False):
    @task
    def deploy() -> str:
        return "the application now reads the target"

    deploy()
'''


class GroupMember:
    """A consumer of `group` on the source that reads and commits until told to stop: the group stays active."""

    def __init__(self, config: dict[str, str], topic: str, group: str) -> None:
        self.stop = threading.Event()
        self.read = 0
        self.consumer = Consumer({**config, "group.id": group, "auto.offset.reset": "earliest",
                                  "enable.auto.commit": False})
        self.consumer.subscribe([topic])
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            messages = [m for m in self.consumer.consume(100, timeout=0.5) if m.error() is None]
            if messages:
                self.read += len(messages)
                self.consumer.commit(asynchronous=False)
        self.consumer.close()

    def leave(self) -> None:
        self.stop.set()
        self.thread.join(60)


def _duration_s(ti: dict) -> float:
    if not ti.get("start_date") or not ti.get("end_date"):
        return 0.0
    return (datetime.fromisoformat(ti["end_date"]) - datetime.fromisoformat(ti["start_date"])).total_seconds()


def _trigger_logs(services: AirflowServices, dag_id: str, run_id: str, task_id: str) -> dict[str, str]:
    """{file name: text} of what the triggerer(s) logged for a task's trigger (a file per triggerer job)."""
    folder = services.home / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}" / f"task_id={task_id}"
    return {path.name: path.read_text() for path in sorted(folder.rglob("attempt=*.log.trigger.*.log"))}


def _wait_for_state(services: AirflowServices, dag_id: str, run_id: str, task_id: str, state: str,
                    timeout_s: float) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        tis = {ti["task_id"]: ti for ti in services.task_instances(dag_id, run_id)}
        if tis.get(task_id, {}).get("state") == state:
            return tis[task_id]
        assert services.run_state(dag_id, run_id) in ("queued", "running"), {k: v["state"] for k, v in tis.items()}
        assert time.monotonic() < deadline, f"{task_id} never {state}: {({k: v['state'] for k, v in tis.items()})}"
        time.sleep(1)


@dataclass
class Deployment:
    """Airflow's real components over one migration plan on the real clusters, and the names it uses."""

    services: AirflowServices
    plan_file: Path
    plan_name: str
    topic: str
    group: str
    deploy_dag: str

    @property
    def dag_id(self) -> str:
        return f"kafka_migration__{self.plan_name}"


@pytest.fixture(scope="module")
def deployment(kafka_pair, registry_pair, tmp_path_factory) -> Iterator[Deployment]:
    source, target = kafka_pair
    suffix = uuid.uuid4().hex[:8]
    p = f"sched-{suffix}-"
    base = tmp_path_factory.mktemp("airflow-scheduler")
    plans, dags = base / "plans", base / "dags"
    plans.mkdir()
    dags.mkdir()
    plan_name = f"sched{suffix}"
    plan_file = plans / f"{plan_name}.yaml"
    plan_file.write_text(yaml.safe_dump({
        "name": plan_name,
        "source": {"alias": "src", "conn_id": "kafka_source"},
        "target": {"alias": "tgt", "conn_id": "kafka_target"},
        "topics": {"include": [f"{p}.*"]},
        "groups": {"include": [f"{p}.*"]},
        "engine": {"refresh_interval_s": 2, "status_interval_s": 1},
        "cutover": {"groups": [p + "billing"], "producer_idle_s": 2, "wait_timeout_s": 300},
    }))
    # Its connection is never defined: its pages say so. (Named to sort after the plan above: the backfill form
    # offers the first plan file by default.)
    (plans / "unreachable.yaml").write_text(yaml.safe_dump({
        "name": "unreachable", "source": {"alias": "dc1", "conn_id": "kafka_dc1"},
        "target": {"alias": "tgt", "conn_id": "kafka_target"}, "topics": {"include": ["unreachable-.*"]}}))
    # A plan whose records point into schema registries, named by Airflow connections (its pages are looked at;
    # its DAG is not run). Named to sort after the plan above.
    (plans / f"schemas{suffix}.yaml").write_text(yaml.safe_dump({
        "name": f"schemas{suffix}", "source": {"alias": "src", "conn_id": "kafka_source"},
        "target": {"alias": "tgt", "conn_id": "kafka_target"}, "topics": {"include": [f"pays-{suffix}-.*"]},
        "schemas": {"source": {"conn_id": "registry_source"}, "target": {"conn_id": "registry_target"}}}))
    (dags / "migrations.py").symlink_to(ROOT / "dags" / "migrations.py")
    deploy_dag = f"deploy_{suffix}"
    (dags / "deploy.py").write_text(DEPLOY_DAG.format(group_id=suffix, plan=plan_name, group=p + "billing"))
    services = AirflowServices(base / "airflow", dags, {
        "KAFKA_MIGRATION_PLANS": str(plans),
        "AIRFLOW_CONN_KAFKA_SOURCE": json.dumps({"conn_type": "kafka",
                                                 "extra": {"bootstrap.servers": source.bootstrap}}),
        "AIRFLOW_CONN_KAFKA_TARGET": json.dumps({"conn_type": "kafka",
                                                 "extra": {"bootstrap.servers": target.bootstrap}}),
        "AIRFLOW_CONN_SPARK_LOCAL": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        "AIRFLOW_CONN_REGISTRY_SOURCE": json.dumps({"conn_type": "schema_registry", "host": registry_pair[0].url}),
        "AIRFLOW_CONN_REGISTRY_TARGET": json.dumps({"conn_type": "schema_registry", "host": registry_pair[1].url}),
    })
    deployment = Deployment(services, plan_file, plan_name, p + "orders", p + "billing", deploy_dag)
    try:
        services.start()
        for dag in (deployment.dag_id, "kafka_migration_backfill", deploy_dag):
            services.wait_for_dag(dag)
        yield deployment
    finally:
        services.stop()
        pid_file = base / "airflow" / "mirror-engine" / f"{plan_name}.pid"
        if pid_file.exists():  # a run failed before its finish stage stopped the engine
            from mirror_engine.replication import SupervisionError, stop_engine

            with contextlib.suppress(SupervisionError):
                stop_engine(pid_file, timeout_s=10, kill_timeout_s=10)


def test_migration_run_by_the_scheduler_defers_every_wait_and_records_asset_events(kafka_pair, deployment):
    source, target = kafka_pair
    services, dag_id = deployment.services, deployment.dag_id
    topic, group, deploy_dag = deployment.topic, deployment.group, deployment.deploy_dag
    create_topics(source, [NewTopic(topic, 3, 1)])
    produce(source, topic, [(i % 3, f"k{i % 7}".encode(), f"order-{i}".encode(), [("h", b"1")], NOW + i)
                            for i in range(3000)])
    member = GroupMember(source.client_config(), topic, group)
    try:
        started = time.monotonic()
        run_id = services.trigger(dag_id, {"groups": [group], "producer_topics": [topic], "producer_idle_s": 2,
                                           "wait_timeout_s": 300})
        # The group still has a member on the source: its switch waits, deferred, and says why in its log.
        ready = _wait_for_state(services, dag_id, run_id, "switch_groups.switch", "deferred", 400)
        assert ready["rendered_map_index"] == group
        time.sleep(4)  # at least one poll's progress line
        assert "member(s) on the source to stop" in services.task_log(dag_id, run_id, "switch_groups.switch", 0)
        _cockpit_shows_the_live_copy(deployment, source, target, run_id)

        # A triggerer restart mid-wait: the wait is taken up again by the new triggerer and still completes.
        services.stop_component("triggerer")
        services.start_component("triggerer")
        time.sleep(5)
        member.leave()
        state = services.wait_for_run(dag_id, run_id, 600)
        wall_s = time.monotonic() - started
        tis = services.task_instances(dag_id, run_id)
        durations = {f"{ti['task_id']}[{ti['rendered_map_index']}]" if ti["map_index"] >= 0 else ti["task_id"]:
                     (ti["state"], round(_duration_s(ti), 1)) for ti in tis}
        print(f"\nmigration run by the scheduler: {state} in {wall_s:.0f} s")
        for task, (task_state, seconds) in durations.items():
            print(f"  {task:<42} {task_state:<10} {seconds:>6.1f} s")
        assert state == "success", (durations, services.log_tail("scheduler"))

        states = {ti["task_id"]: ti["state"] for ti in tis}
        skipped = {"backfill.history", "backfill.done"}  # no backfill topics
        assert {t for t, s in states.items() if s == "skipped"} == skipped, states
        assert all(s == "success" for t, s in states.items() if t not in skipped), states
        # The engine was started detached: its task held its executor slot for seconds, not a minute.
        assert durations["replicate.start"][1] < 20, durations
        switch = next(ti for ti in tis if ti["task_id"] == "switch_producers.switch")
        assert switch["rendered_map_index"] == topic
        # The switch task links to its report in the cockpit.
        status, links = services.api(
            "GET", f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/switch_groups.switch/links?map_index=0")
        assert status == 200 and f"/kafka-migrations/plans/{deployment.plan_name}/cutover" in json.dumps(links), links

        # Every sensor deferred to the triggerer, which ran its trigger to the event; the group's wait was run by
        # both triggerers, the one stopped mid-wait and the one after it.
        # (A sensor whose first attempt Airflow failed before it ran, as it can on a loaded machine, looks once on
        # its retry and may finish without deferring: such sensors are named, and the group's wait, which is
        # held open by the test, must have deferred.)
        tries = {ti["task_id"]: ti["try_number"] for ti in tis}
        deferred = {sensor for sensor in SENSORS if any(
            "Trigger fired event" in text for text in _trigger_logs(services, dag_id, run_id, sensor).values())}
        retried = {sensor for sensor in SENSORS if tries[sensor] > 1}
        print(f"  sensors deferred: {len(deferred)} of {len(SENSORS)}; retried: {sorted(retried) or 'none'}")
        assert set(SENSORS) == deferred | retried, (deferred, retried)
        restarted = _trigger_logs(services, dag_id, run_id, "switch_groups.switch")
        assert len(restarted) >= 2, list(restarted)

        # The switched group is on the target at exactly its source offsets (identity naming).
        assert committed_offsets(AdminClient(target.client_config()), group) == committed_offsets(
            AdminClient(source.client_config()), group)

        # The group's Asset and its event exist, and the DAG scheduled on it ran.
        uri = f"kafka-migration://{deployment.plan_name}/groups/{group}"
        status, assets = services.api("GET", f"/assets?uri_pattern={uri}")
        assert status == 200 and [a["uri"] for a in assets["assets"]] == [uri], assets
        status, events = services.api("GET", f"/assets/events?asset_id={assets['assets'][0]['id']}")
        assert status == 200 and events["total_entries"] >= 1, events
        deadline = time.monotonic() + 120
        while services.api("GET", f"/dags/{deploy_dag}/dagRuns")[1]["total_entries"] < 1:
            assert time.monotonic() < deadline, "the DAG scheduled on the switched group's Asset never ran"
            time.sleep(2)
    finally:
        member.leave()


def test_a_finished_migrations_switch_groups_cleared_runs_again_and_repeats_nothing(kafka_pair, deployment):
    """The switch_groups stage of the finished run cleared (as a person would in the UI): it runs again and
    succeeds without committing anything: the stored proof is the same, the group's offsets on the target too."""
    _source, target = kafka_pair
    services, dag_id, group = deployment.services, deployment.dag_id, deployment.group
    runs = services.api("GET", f"/dags/{dag_id}/dagRuns?state=success")[1]["dag_runs"]
    assert runs, "the migration run of the test before did not succeed"
    run_id = runs[-1]["dag_run_id"]
    store = ReportStore(load_plan(deployment.plan_file), target.client_config())
    before = store.read("group-switch")[f"group-switch:{group}"]
    offsets = committed_offsets(AdminClient(target.client_config()), group)
    tasks = ["switch_groups.groups", "switch_groups.switch"]
    status, body = services.api("POST", f"/dags/{dag_id}/clearTaskInstances", {
        "dag_run_id": run_id, "task_ids": tasks, "only_failed": False, "dry_run": False,
        "include_downstream": False, "include_upstream": False, "reset_dag_runs": True})
    assert status == 200 and len(body["task_instances"]) >= 2, (status, body)
    assert services.wait_for_run(dag_id, run_id, 300) == "success", services.task_instances(dag_id, run_id)
    switch = next(ti for ti in services.task_instances(dag_id, run_id) if ti["task_id"] == "switch_groups.switch")
    assert switch["try_number"] >= 2, switch
    assert "was already switched" in services.task_log(dag_id, run_id, "switch_groups.switch", 0,
                                                       switch["try_number"])
    after = store.read("group-switch")[f"group-switch:{group}"]
    store.close()
    assert after["stored_ms"] == before["stored_ms"] and after["report"] == before["report"]
    assert committed_offsets(AdminClient(target.client_config()), group) == offsets


def test_backfill_form_triggers_with_only_its_plan_and_the_migration_form_reads_well(deployment):
    """In the real UI (Debian's chromium): the backfill DAG's form starts a run with every optional field left
    empty; the migration DAG's form offers the stages as a multi-select and marks no optional field required."""
    from tests.integration.airflow_services import browser_page

    services = deployment.services
    before = {run["dag_run_id"] for run in services.api("GET", "/dags/kafka_migration_backfill/dagRuns")[1]["dag_runs"]}
    with browser_page(services) as page:
        dialog = open_trigger_form(page, services, "kafka_migration_backfill")
        assert "Migration plan" in dialog.inner_text() and deployment.plan_name in dialog.inner_text()
        page.screenshot(path=str(REPORTS / "airflow-backfill-form.png"))
        trigger = dialog.get_by_role("button", name="Trigger", exact=True)
        assert trigger.is_enabled(), "the backfill form cannot be submitted with its optional fields empty"
        trigger.click()
        deadline = time.monotonic() + 60
        while not (started := [run for run in services.api("GET", "/dags/kafka_migration_backfill/dagRuns")[1][
                "dag_runs"] if run["dag_run_id"] not in before]):
            assert time.monotonic() < deadline, "the form's Trigger started no run"
            time.sleep(1)

        dialog = open_trigger_form(page, services, deployment.dag_id)
        page.screenshot(path=str(REPORTS / "airflow-migration-form.png"), full_page=True)
        text = dialog.inner_text()
        for title in ("Stages to run", "Consumer groups to switch", "Topics whose producers switch",
                      "Largest lag to go on with (records)"):
            assert title in text, title
        assert "1. Preflight" in text and "10. Finish" in text  # the stages, as options of a multi-select
        for optional in ("Consumer groups to switch", "Topics whose producers switch"):
            label = dialog.get_by_text(optional, exact=True)
            assert "*" not in label.locator("xpath=..").inner_text(), f"{optional} is marked required"

        dialog = open_trigger_form(page, services, "kafka_migration_flow_control")
        assert not dialog.get_by_role("button", name="Trigger", exact=True).is_enabled(), (
            "the flow-control form must not trigger before an action is chosen")

    assert started[0]["conf"].get("plan") == str(deployment.plan_file), started[0]
    assert services.wait_for_run("kafka_migration_backfill", started[0]["dag_run_id"], 300) == "success"


def open_trigger_form(page, services: AirflowServices, dag_id: str):
    page.goto(f"{services.url}/dags/{dag_id}", wait_until="networkidle")
    page.get_by_role("button", name="Trigger Dag").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_text("Run Parameters").wait_for()
    return dialog


def _cockpit_shows_the_live_copy(deployment: Deployment, source, target, run_id: str) -> None:
    """While the run's engine copies: the cockpit's overview shows the lag of records written while the flow is
    paused, that it does not converge, and, without a reload, the lag falling to 0 once it is resumed; the
    migration page and the run's tab say where the run stands and why it waits; the pages follow Airflow's
    timezone and dark theme."""
    from mirror_engine.flow import ControlChannel
    from mirror_engine.plan import load_plan
    from tests.integration.airflow_services import browser_page

    services = deployment.services
    plan = load_plan(deployment.plan_file)
    control = ControlChannel(plan, target.client_config())
    with browser_page(services) as page:
        control.set_flow_state("paused")
        time.sleep(4)  # the engine applies it within two seconds
        produce(source, deployment.topic, [(i % 3, b"late", f"late-{i}".encode(), None, NOW + i) for i in range(600)])
        page.goto(f"{services.url}/plugin/migrations", wait_until="networkidle")
        # The nav label is whole, not cut to "Kafka mig...". Airflow renders its navigation after the page's
        # requests settle: on a busy machine that can be a moment after `networkidle`.
        page.get_by_text("Migrations", exact=True).first.wait_for(timeout=30_000)
        row = page.frame_locator("iframe").first.locator("tr", has_text=deployment.plan_name)
        _wait_for_text(row, r"\b600 records(?!/)", 60)
        _wait_for_text(row, "not converging", 60)  # paused: the lag does not fall, so no ETA
        page.screenshot(path=str(REPORTS / "cockpit-overview-paused.png"))
        control.set_flow_state("running")
        _wait_for_text(row, r"(?<![\d,])0 records(?!/)", 90)  # the page refreshes itself: no reload
        _wait_for_text(row, "caught up", 30)
        page.screenshot(path=str(REPORTS / "cockpit-overview.png"))
        # A plan whose connection is missing says so in its row, with no exception class.
        broken = page.frame_locator("iframe").first.locator("tr", has_text="unreachable").inner_text()
        assert "connection 'kafka_dc1' is not defined" in broken and "Exception" not in broken, broken

        page.goto(f"{services.url}/kafka-migrations/plans/{deployment.plan_name}", wait_until="networkidle")
        stamp = page.locator("#totals [data-ms]").get_attribute("data-ms")
        deadline = time.monotonic() + 30
        while page.locator("#totals [data-ms]").get_attribute("data-ms") == stamp:
            assert time.monotonic() < deadline, "the migration page did not refresh by itself"
            time.sleep(0.5)
        text = page.locator("#partitions").inner_text()
        for partition in range(3):
            assert f"{deployment.topic}[{partition}]" in text
        assert "live engines\n1" in page.locator("#totals").inner_text()
        assert deployment.group in page.locator("#checkpoints").inner_text()
        # Where the run stands and why it waits: the group's wait, its live condition, time waited and left.
        _wait_for_text(page.locator("#strip"), r"stage now: .*switch_groups", 30)
        _wait_for_text(page.locator("#strip"), rf"switch_groups\.switch\[{re.escape(deployment.group)}\]: .*"
                       r"member\(s\) on the source to stop.*waiting for \d.*timeout in \d", 60)
        # Lag and rates on two charts, each with its axis and units.
        _wait_for_text(page.locator("#chart"), r"lag \(records\)[\s\S]*copy rate \(records/s\)", 30)
        page.screenshot(path=str(REPORTS / "cockpit-migration.png"), full_page=True)

        # The run's tab in the Airflow UI: that run's stages, and the same strip.
        page.goto(f"{services.url}/dags/{deployment.dag_id}/runs/{run_id}/plugin/kafka-migration-run",
                  wait_until="networkidle")
        tab = page.frame_locator("iframe").first
        _wait_for_text(tab.locator("main"), r"Stages[\s\S]*preflight\s+success[\s\S]*switch_groups\s+deferred", 60)
        assert "Live migration page" in tab.locator("main").inner_text()
        page.screenshot(path=str(REPORTS / "cockpit-run-tab.png"), full_page=True)

        # Airflow's timezone and dark theme, chosen in its UI (kept in the browser's local storage).
        page.evaluate("localStorage.setItem('timezone', JSON.stringify('Asia/Tokyo')); "
                      "localStorage.setItem('theme', 'dark')")
        page.goto(f"{services.url}/plugin/migrations/kafka-migrations/plans/{deployment.plan_name}",
                  wait_until="networkidle")
        frame = page.frame_locator("iframe").first
        _wait_for_text(frame.locator("#totals"), r"as of \d{4}-\d\d-\d\d.*GMT\+9", 30)
        assert page.evaluate("document.documentElement.classList.contains('dark')"), "Airflow is not dark"
        assert frame.locator("html").get_attribute("data-theme") == "dark"
        background = frame.locator("body").evaluate("el => getComputedStyle(el).backgroundColor")
        assert sum(int(c) for c in re.findall(r"\d+", background)[:3]) < 150, background
        page.screenshot(path=str(REPORTS / "cockpit-migration-dark.png"), full_page=True)
        page.evaluate("localStorage.removeItem('timezone'); localStorage.setItem('theme', 'light')")


def _wait_for_text(locator, pattern: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not re.search(pattern, locator.inner_text()):
        assert time.monotonic() < deadline, f"never showed {pattern!r}: {locator.inner_text()}"
        time.sleep(1)


def test_cockpit_requires_the_airflow_login(deployment):
    services = deployment.services
    for path in ("/kafka-migrations/", f"/kafka-migrations/api/plans/{deployment.plan_name}"):
        status = _status_without_login(services.url + path)
        assert status == 401, (path, status)
    status, overview = _get_json(services, "/kafka-migrations/api/overview")
    assert status == 200 and deployment.plan_name in [row["plan"] for row in overview], overview


def test_airflows_connection_form_offers_the_schema_registry_type(deployment):
    """The api-server's connection form lists `schema_registry` (the project's provider entry), with its fields
    named for a registry; and the Add Connection form in a browser offers it."""
    from tests.integration.airflow_services import browser_page

    services = deployment.services
    status, types = _get_json(services, "/ui/connections/hook_meta")
    assert status == 200
    [registry] = [t for t in types if t["connection_type"] == "schema_registry"]
    assert registry["hook_name"] == "Schema registry (migration)"
    assert registry["standard_fields"]["host"]["title"] == "URL", registry
    assert "ccompat" in registry["standard_fields"]["host"]["placeholder"], registry
    with browser_page(services) as page:
        page.goto(f"{services.url}/connections", wait_until="networkidle")
        page.get_by_role("button", name="Add Connection").click()
        page.get_by_text("Connection Type").first.wait_for()
        page.get_by_role("combobox").first.click()
        page.get_by_text("Schema registry (migration)").first.click(timeout=15_000)
        dialog = page.get_by_role("dialog")
        for label in ("URL", "User (basic auth)"):  # the form's fields, named for a registry
            dialog.get_by_text(label, exact=True).first.wait_for(timeout=15_000)


def test_a_plans_page_shows_its_schemas_moved(kafka_pair, registry_pair, deployment, tmp_path):
    """The plan page of a plan with schema registries (named by Airflow connections) shows the last move of its
    subjects: counts, and each schema id with the target's."""
    from mirror_engine.cli import main
    from mirror_engine.schemas import RegistryClient, Schema
    from tests.integration.airflow_services import browser_page
    from tests.integration.plans import plan_dict

    source, target = kafka_pair
    services, suffix = deployment.services, deployment.plan_name.removeprefix("sched")
    name, topic = f"schemas{suffix}", f"pays-{suffix}-payments"
    create_topics(source, [NewTopic(topic, 1, 1)])
    def payment(name: str) -> Schema:
        return Schema(json.dumps({"type": "record", "name": name, "fields": [{"name": "n", "type": "int"}]}))

    for n in range(3):  # the target's ids run ahead of the source's, so the page shows translated ids
        RegistryClient({"url": registry_pair[1].url}).register(f"filler-{suffix}-{n}-value", payment(f"Filler{n}"))
    source_id = RegistryClient({"url": registry_pair[0].url}).register(f"{topic}-value", payment("Payment"))
    # The same flow (name and aliases) with the registries' addresses: its move's report is the page's.
    data = plan_dict(source, target, f"pays-{suffix}-", name=name)
    data["schemas"] = {"source": {"url": registry_pair[0].url}, "target": {"url": registry_pair[1].url}}
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(data))
    assert main(["schemas", "--plan", str(tmp_path / "plan.yaml")]) == 0
    found = RegistryClient({"url": registry_pair[1].url}).lookup(f"{topic}-value", payment("Payment"))
    assert found is not None and found[0] != source_id
    target_id = found[0]

    with browser_page(services) as page:
        page.goto(f"{services.url}/kafka-migrations/plans/{name}", wait_until="networkidle")
        section = page.locator("#schemas")
        _wait_for_text(section, r"1 subject\(s\), 1 version\(s\) on the target registry", 60)
        assert re.search(rf"\b{source_id}\s+{target_id}\b", section.inner_text()), section.inner_text()
        page.screenshot(path=str(REPORTS / "cockpit-schemas.png"), full_page=True)


def test_cockpit_shows_the_switch_proofs_and_a_damaged_copy(kafka_pair, deployment):
    """After the run: the cutover page shows each partition's proof as stored; a record lost on the target
    shows in the validation page at its partition and offset."""
    from confluent_kafka import TopicPartition

    from tests.integration.airflow_services import browser_page

    _source, target = kafka_pair
    services, plan = deployment.services, deployment.plan_name
    status, cutover = _get_json(services, f"/kafka-migrations/api/plans/{plan}/cutover")
    assert status == 200
    group = next(row for row in cutover["groups"] if row["group"] == deployment.group)
    assert group["state"] == "switched" and group["report"]["ok"], group
    run_id = services.api("GET", f"/dags/{deployment.dag_id}/dagRuns?state=success")[1]["dag_runs"][0]["dag_run_id"]
    status, links = services.api("GET", f"/dags/{deployment.dag_id}/dagRuns/{run_id}/taskInstances/"
                                        "switch_groups.switch/links?map_index=0")
    switch_link = next(link for link in links["extra_links"].values() if link and link.endswith("/cutover"))
    with browser_page(services) as page:
        # The switch task's extra link opens the cutover page inside the Airflow UI, fitting its frame at 1440 px.
        page.set_viewport_size({"width": 1440, "height": 1000})
        page.goto(services.url + switch_link, wait_until="networkidle")
        # Airflow's own navigation is there (rendered by its app after the page's requests settle, hence a wait;
        # a second match would fail the wait as well: playwright's locators are strict).
        page.get_by_role("button", name="Browse").wait_for()
        frame = page.frame_locator("iframe").first
        frame.locator("h1", has_text=f"Cutover of {plan}").wait_for()
        fits = frame.locator("html").evaluate("el => el.scrollWidth <= el.clientWidth")
        assert fits, "the cutover page is wider than its frame"
        shown = frame.locator("table").first.inner_text()
        for row in group["report"]["partitions"]:
            line = next(line for line in shown.splitlines() if line.startswith(f"{row['topic']}[{row['partition']}]"))
            assert "\tok\t" in line, line
            assert f"{row['source_offset']:,}" in line and f"{row['target_offset']:,}" in line, line
        assert "group's consumer lag" in shown and "src → tgt: verified" in frame.locator("main").inner_text()
        page.screenshot(path=str(REPORTS / "cockpit-cutover.png"), full_page=True)
        # The cutover page refreshes itself (its main part replaced in place, without a reload).
        frame.locator("main").evaluate("el => el.firstElementChild.setAttribute('data-old', '1')")
        deadline = time.monotonic() + 30
        while frame.locator("main [data-old]").count():
            assert time.monotonic() < deadline, "the cutover page did not refresh by itself"
            time.sleep(0.5)

        # The finished run's tab shows that run: its stages and the switch report it produced.
        page.goto(f"{services.url}/kafka-migrations/runs/{deployment.dag_id}/{run_id}", wait_until="networkidle")
        text = page.locator("main").inner_text()
        assert re.search(r"Run \S+: success", text) and re.search(r"finish\s+success", text), text
        assert f"Group {deployment.group}: switched" in text and "verified" in text, text
        page.screenshot(path=str(REPORTS / "cockpit-run-finished.png"), full_page=True)

        # A plan whose connection is missing, and a plan that does not exist: pages that say why, no 500.
        response = page.goto(f"{services.url}/kafka-migrations/plans/unreachable/cutover", wait_until="networkidle")
        assert response.status != 500 and "connection 'kafka_dc1' is not defined" in page.locator("main").inner_text()
        page.screenshot(path=str(REPORTS / "cockpit-missing-connection.png"))
        response = page.goto(f"{services.url}/kafka-migrations/plans/no-such-plan", wait_until="networkidle")
        assert response.status == 404 and "no migration plan named 'no-such-plan'" in page.locator("main").inner_text()
        assert str(deployment.plan_file.parent) not in page.content()

        # Records lost on the target (its first 5 in partition 0), then the plan's validation DAG.
        admin = AdminClient(target.client_config())
        for future in admin.delete_records([TopicPartition(deployment.topic, 0, 5)], request_timeout=30).values():
            future.result()
        run_id = services.trigger(f"kafka_migration_validate__{plan}", {})
        assert services.wait_for_run(f"kafka_migration_validate__{plan}", run_id, 400) == "failed"  # not clean
        page.goto(f"{services.url}/kafka-migrations/plans/{plan}/validations", wait_until="networkidle")
        damaged = page.locator("tr.bad", has_text=deployment.topic).last  # the report's row of partition 0
        assert "missing at source [0, 1, 2, 3, 4]" in damaged.inner_text(), damaged.inner_text()
        assert "NOT CLEAN" in page.content()
        page.screenshot(path=str(REPORTS / "cockpit-validation.png"), full_page=True)


def _status_without_login(url: str) -> int:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def _get_json(services: AirflowServices, path: str) -> tuple[int, Any]:
    import urllib.request

    request = urllib.request.Request(services.url + path, headers={"Authorization": f"Bearer {services.token()}"})
    with urllib.request.urlopen(request, timeout=120) as response:
        return response.status, json.loads(response.read())


def test_the_switch_waits_for_an_approval_approved_in_the_ui_and_a_rejection_leaves_the_engine_copying(deployment):
    """A run that asks for an approval stops before the switch with the summary a person decides on; approved
    from the UI's Required Actions page, the switch runs and the cockpit names who approved; a second run
    rejected skips the cutover and the finish stage, so the engine keeps copying."""
    from tests.integration.airflow_services import browser_page

    services, dag_id, plan = deployment.services, deployment.dag_id, deployment.plan_name
    stages = ["preflight", "prepare", "replicate", "catch_up", "checkpoints", "switch_groups", "switch_producers",
              "finish"]  # no validation: an earlier test damaged the target's copy on purpose
    conf = {"groups": [deployment.group], "producer_topics": [], "wait_timeout_s": 300, "approve_switch": True,
            "stages": stages}
    run_id = services.trigger(dag_id, conf)
    _wait_for_state(services, dag_id, run_id, "approve.switch", "awaiting_input", 400)
    status, detail = services.api("GET", f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/approve.switch/-1/hitlDetails")
    assert status == 200, detail
    for fact in ("**Lag**", "**Validation**", f"**Checkpoints of {deployment.group}**", "**To switch**"):
        assert fact in detail["body"], detail["body"]
    with browser_page(services) as page:
        page.goto(f"{services.url}/kafka-migrations/plans/{plan}", wait_until="networkidle")
        _wait_for_text(page.locator("#strip"), "Waiting for a person.*Required Actions", 30)
        page.screenshot(path=str(REPORTS / "cockpit-awaiting-approval.png"))
        page.goto(f"{services.url}/required_actions", wait_until="networkidle")
        page.get_by_role("link", name=re.compile(r"approve\.switch|^switch$")).first.click()
        page.get_by_role("button", name="Approve").wait_for()
        page.screenshot(path=str(REPORTS / "airflow-required-action.png"), full_page=True)
        page.get_by_role("button", name="Approve").click()
        assert services.wait_for_run(dag_id, run_id, 400) == "success", services.task_instances(dag_id, run_id)
        states = {ti["task_id"]: ti["state"] for ti in services.task_instances(dag_id, run_id)}
        assert states["switch_groups.switch"] == "success" and states["finish.stop_engine"] == "success", states
        page.goto(f"{services.url}/kafka-migrations/plans/{plan}/cutover", wait_until="networkidle")
        assert re.search(r"Switch approved by admin at \d{4}-", page.locator("main").inner_text())
        page.goto(f"{services.url}/kafka-migrations/runs/{dag_id}/{run_id}", wait_until="networkidle")
        assert "Switch approved by admin" in page.locator("main").inner_text()
        page.screenshot(path=str(REPORTS / "cockpit-run-approved.png"), full_page=True)

    rejected = services.trigger(dag_id, conf)
    _wait_for_state(services, dag_id, rejected, "approve.switch", "awaiting_input", 400)
    # As a person would, not within the second: an answer before the executor reports the parked task's process
    # done is failed by Airflow 3.3 on that stale report (apache/airflow#72716; the task's retry asks again).
    time.sleep(8)
    status, body = services.api("PATCH", f"/dags/{dag_id}/dagRuns/{rejected}/taskInstances/approve.switch/-1/"
                                "hitlDetails", {"chosen_options": ["Reject"]})
    assert status == 200, body
    assert services.wait_for_run(dag_id, rejected, 300) == "success"
    states = {ti["task_id"]: ti["state"] for ti in services.task_instances(dag_id, rejected)}
    assert all(states[t] == "skipped" for t in states if t.split(".")[0] in ("switch_groups", "switch_producers",
                                                                               "finish")), states
    time.sleep(3)
    status, snapshot = _get_json(services, f"/kafka-migrations/api/plans/{plan}")
    # The engine the run started still runs (finish skipped); the earlier run switched the topic's producers, so it
    # has nothing left to copy here, but it is live and running.
    assert status == 200 and [engine["state"] for engine in snapshot["engines"]] == ["running"], snapshot
    status, cutover = _get_json(services, f"/kafka-migrations/api/plans/{plan}/cutover")
    assert cutover["approvals"][0]["report"]["decision"] == "rejected", cutover["approvals"]
    _stop_engine(services, plan)


def _stop_engine(services: AirflowServices, plan: str) -> None:
    """Stop the engine a run left running, while the brokers still answer (it exits at once then)."""
    from mirror_engine.replication import stop_engine

    stop_engine(services.home / "mirror-engine" / f"{plan}.pid", timeout_s=60)


def test_the_way_back_run_by_the_scheduler_copies_back_and_moves_the_group_back_exactly(kafka_pair, deployment):
    """The way back's DAG (`kafka_migration_failback__<plan>`) under the scheduler, after the migration above
    switched the group and the topic's producers: records written on the target since are copied back by the engine
    its task started (which reads the clusters' connections through its environment, swapped for the way back),
    every wait defers, and the group is committed back at its exact offsets."""
    from tests.integration.kafka_data import end_offsets, read_partition

    source, target = kafka_pair
    services, topic, group = deployment.services, deployment.topic, deployment.group
    dag_id = f"kafka_migration_failback__{deployment.plan_name}"
    forward_ends = end_offsets(target, topic, 3)
    produce(target, topic, [(i % 3, b"t%d" % i, b"on-target-%d" % i, None, NOW + 100_000 + i) for i in range(300)])
    run_id = services.trigger(dag_id, {"groups": [group], "producer_topics": [topic], "producer_idle_s": 2,
                                       "wait_timeout_s": 300})
    try:
        state = services.wait_for_run(dag_id, run_id, 600)
    finally:
        if (services.home / "mirror-engine" / f"{deployment.plan_name}-failback.pid").exists():  # the run failed
            with contextlib.suppress(Exception):
                _stop_engine(services, f"{deployment.plan_name}-failback")
    tis = services.task_instances(dag_id, run_id)
    states = {ti["task_id"]: ti["state"] for ti in tis}
    assert state == "success" and all(s == "success" for s in states.values()), (states, services.log_tail("scheduler"))
    sensors = ("preflight.clusters_answer", "replicate.engine_copying", "catch_up.wait_for_lag",
               "switch_producers.ready")
    deferred = {sensor for sensor in sensors if any(
        "Trigger fired event" in text for text in _trigger_logs(services, dag_id, run_id, sensor).values())}
    tries = {ti["task_id"]: ti["try_number"] for ti in tis}
    assert set(sensors) == deferred | {sensor for sensor in sensors if tries[sensor] > 1}, deferred
    # What the target received since the cutover is on the source once, in order, after what the forward copy left.
    for p in range(3):
        back = [r.content() for r in read_partition(source, topic, p) if r.offset >= forward_ends[p]]
        assert back == [r.content() for r in read_partition(target, topic, p) if r.offset >= forward_ends[p]]
        assert len(back) == 100
    assert committed_offsets(AdminClient(source.client_config()), group) == committed_offsets(
        AdminClient(target.client_config()), group)

    # The way back's pages in the cockpit, in a real browser: its cutover page shows the group switched back.
    from tests.integration.airflow_services import browser_page

    with browser_page(services) as page:
        page.goto(f"{services.url}/kafka-migrations/plans/{deployment.plan_name}-failback/cutover",
                  wait_until="networkidle")
        _wait_for_text(page.locator("main"), rf"Group {re.escape(group)}: switched", 30)
        assert "tgt → src: verified" in page.locator("main").inner_text()
        page.screenshot(path=str(REPORTS / "cockpit-way-back-cutover.png"), full_page=True)
