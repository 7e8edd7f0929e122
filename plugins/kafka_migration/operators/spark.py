"""The Spark jobs of a migration through the Spark provider's SparkSubmitOperator.

The master comes from the Spark connection (`spark_conn_id`; local[2] in the demo). The Kafka
connector's jars are resolved when the task runs, not when the DAG is parsed, and the clusters'
settings reach the job in its environment (never on the spark-submit command line, which is logged).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk.exceptions import AirflowSkipException

from kafka_migration.cockpit.links import ValidationReportLink
from kafka_migration.hooks.plan import MigrationPlanHook
from kafka_migration.stages import skip_unless_selected

SPARK_JOBS = Path(__file__).resolve().parents[3] / "spark_jobs"


class MigrationSparkSubmitOperator(SparkSubmitOperator):
    template_fields = (*SparkSubmitOperator.template_fields, "plan_path")
    operator_extra_links = (ValidationReportLink(),)

    def __init__(self, *, job: str, plan_path: str, stage: str, job_args: list[str] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(application=str(SPARK_JOBS / f"{job}.py"),
                         application_args=["--plan", plan_path, *(job_args or [])], **kwargs)
        self.plan_path = plan_path
        self.stage = stage

    def execute(self, context: Any) -> None:
        skip_unless_selected(self.stage, context)
        hook = MigrationPlanHook(self.plan_path)
        if self.stage == "backfill" and not hook.plan.backfill.topics:
            raise AirflowSkipException("the plan names no backfill topics")
        from spark_jobs.session import kafka_connector_jars

        self.jars = ",".join(kafka_connector_jars())
        # PYSPARK_PYTHON: a local driver's Python workers run this interpreter, which has the project's packages.
        self.env_vars = {"PYSPARK_PYTHON": sys.executable, **(self.env_vars or {}), **hook.process_env()}
        super().execute(context)
