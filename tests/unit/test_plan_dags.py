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
