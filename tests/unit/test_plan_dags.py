"""The plans folder and the DAG ids of a plan are decided once (`kafka_migration.plan_dags`): the DAG file names its
DAGs with it and the cockpit finds the plan of a DAG again with it."""

from __future__ import annotations

from pathlib import Path

from kafka_migration.plan_dags import migration_dag_id, plan_of, plans_folder, validation_dag_id

ROOT = Path(__file__).resolve().parents[2]


def test_a_plans_dag_ids_lead_back_to_the_plan():
    assert migration_dag_id("shop") == "kafka_migration__shop"
    assert validation_dag_id("shop") == "kafka_migration_validate__shop"
    assert plan_of(migration_dag_id("shop")) == plan_of(validation_dag_id("shop")) == "shop"
    assert plan_of("kafka_migration_backfill") is None and plan_of("kafka_cluster_smoke") is None


def test_the_plans_folder_is_the_projects_unless_the_environment_names_one(monkeypatch, tmp_path):
    monkeypatch.delenv("KAFKA_MIGRATION_PLANS", raising=False)
    assert plans_folder() == ROOT / "migrations"
    monkeypatch.setenv("KAFKA_MIGRATION_PLANS", str(tmp_path))
    assert plans_folder() == tmp_path


def test_nothing_else_spells_the_dag_prefix_or_the_plans_variable():
    spelled = [path.relative_to(ROOT) for folder in ("dags", "plugins") for path in (ROOT / folder).rglob("*.py")
               if path.name != "plan_dags.py" and ("kafka_migration__" in path.read_text()
                                                  or "kafka_migration_validate__" in path.read_text()
                                                  or 'environ.get("KAFKA_MIGRATION_PLANS"' in path.read_text())]
    assert spelled == []


def test_a_plan_of_1000_groups_parses_to_tasks_that_do_not_carry_the_list_and_its_run_switches_them(
        monkeypatch, tmp_path):
    """Airflow copies the DAG's params into each of its tasks at parse time: the plan's groups are left out of them
    (so that parse does not grow with the groups) and read by the run's `groups` task."""
    import yaml
    from airflow.dag_processing.dagbag import DagBag

    groups = [f"app-{i:04d}" for i in range(1000)]
    (tmp_path / "big.yaml").write_text(yaml.safe_dump({
        "name": "big", "source": {"alias": "src", "bootstrap_servers": "127.0.0.1:1"},
        "target": {"alias": "tgt", "bootstrap_servers": "127.0.0.1:2"}, "topics": {"include": ["orders"]},
        "cutover": {"groups": groups}}))
    monkeypatch.setenv("KAFKA_MIGRATION_PLANS", str(tmp_path))
    bag = DagBag(dag_folder=str(ROOT / "dags" / "migrations.py"))
    assert not bag.import_errors, bag.import_errors
    dag = bag.get_dag(migration_dag_id("big"))
    assert all(task.params.dump().get("groups") is None for task in dag.tasks)
    assert sum(1 for task in dag.tasks if "groups" in task.params) > 10
    assert "1,000 group(s)" in dag.params.get_param("groups").description
    pick = dag.get_task("switch_groups.groups").python_callable
    assert pick(params={"groups": None}) == groups
    assert pick(params={"groups": ["app-0007"]}) == ["app-0007"] and pick(params={"groups": []}) == []
