"""The Spark jobs the migration DAG submits get the same JVM heap as a local session (`spark_jobs.session`): the
plan's `backfill.spark_driver_memory` and `backfill.spark_executor_memory` (2g by default) reach spark-submit's
command line, for the backfill and for validation; an operator given its own sizes keeps them."""

from __future__ import annotations

import json

import pytest
import yaml

PLAN = {"name": "heap", "backfill": {"topics": ["orders"]},
        "validation": {"in_process_max_records": 0},  # always submits to Spark
        "source": {"alias": "src", "bootstrap_servers": "127.0.0.1:1"},
        "target": {"alias": "tgt", "bootstrap_servers": "127.0.0.1:2"}}


@pytest.fixture
def submitted(monkeypatch) -> list[list[str]]:
    """The spark-submit command lines the operator would run (nothing is run)."""
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    monkeypatch.setenv("AIRFLOW_CONN_SPARK_HEAP", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    commands: list[list[str]] = []

    def submit(self: SparkSubmitHook, application: str = "", **kwargs: object) -> None:
        commands.append(self._build_spark_submit_command(application))

    monkeypatch.setattr(SparkSubmitHook, "submit", submit)
    return commands


def _plan(tmp_path, **backfill: str) -> str:
    path = tmp_path / "heap.yaml"
    path.write_text(yaml.safe_dump({**PLAN, "backfill": {**PLAN["backfill"], **backfill}}))
    return str(path)


def _option(command: list[str], name: str) -> str | None:
    return command[command.index(name) + 1] if name in command else None


@pytest.mark.parametrize("job", ["backfill", "validate"])
def test_a_submitted_job_gets_a_2g_driver_and_executor_heap_by_default(tmp_path, submitted, job):
    from kafka_migration.operators.spark import MigrationSparkSubmitOperator

    MigrationSparkSubmitOperator(task_id=job, job=job, plan_path=_plan(tmp_path), stage=job,
                                 conn_id="spark_heap").execute({"params": {}})
    [command] = submitted
    assert (_option(command, "--driver-memory"), _option(command, "--executor-memory")) == ("2g", "2g")


def test_the_plan_sets_the_heap_and_an_operators_own_size_wins(tmp_path, submitted):
    from kafka_migration.operators.spark import MigrationSparkSubmitOperator

    plan = _plan(tmp_path, spark_driver_memory="3g", spark_executor_memory="4096m")
    MigrationSparkSubmitOperator(task_id="history", job="backfill", plan_path=plan, stage="backfill",
                                 conn_id="spark_heap").execute({"params": {}})
    MigrationSparkSubmitOperator(task_id="history", job="backfill", plan_path=plan, stage="backfill",
                                 conn_id="spark_heap", driver_memory="1g").execute({"params": {}})
    assert [(_option(c, "--driver-memory"), _option(c, "--executor-memory")) for c in submitted] == [
        ("3g", "4096m"), ("1g", "4096m")]


def test_a_heap_size_spark_cannot_read_is_refused_with_the_field(tmp_path):
    from mirror_engine.plan import MigrationPlan

    with pytest.raises(ValueError, match=r"(?s)spark_driver_memory.*such as 2g"):
        MigrationPlan.model_validate({**PLAN, "backfill": {"spark_driver_memory": "two gigs"}})
