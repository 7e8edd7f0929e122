"""The Spark jobs of a migration through the Spark provider's SparkSubmitOperator.

The master comes from the Spark connection (`spark_conn_id`; local[2] in the demo). spark-submit
resolves the Kafka connector (`--packages`, coordinates from `spark_jobs.packages`) when the task runs, not when
the DAG is parsed, and the clusters' settings reach the job in its environment (never on the spark-submit
command line, which is logged).
A validation of a copy of at most `validation.in_process_max_records` records runs in the task itself,
without Spark (`validate.py --in-process`): a Spark application's start would take most of the stage.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk.exceptions import AirflowException, AirflowSkipException

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
        if self.stage == "validate" and self._validate_in_process(hook):
            return
        from spark_jobs.packages import job_packages

        # Spark resolves the connector itself (--packages), into the project's Ivy cache.
        packages = job_packages()
        self.packages, self.exclude_packages = ",".join(packages.packages), ",".join(packages.excludes)
        self.conf = {**(self.conf or {}), "spark.jars.ivy": packages.conf()["spark.jars.ivy"]}
        # PYSPARK_PYTHON: a local driver's Python workers run this interpreter, which has the project's packages.
        self.env_vars = {"PYSPARK_PYTHON": sys.executable, **(self.env_vars or {}), **hook.process_env()}
        super().execute(context)

    def _validate_in_process(self, hook: MigrationPlanHook) -> bool:
        """Validate a small copy here, without Spark; False when the copy is too large for that."""
        from spark_jobs import validate

        limit = hook.plan.validation.in_process_max_records
        if not limit:
            return False
        with _environment(hook.process_env()):  # the clusters' settings, as a submitted job gets them
            records = validate.copied_record_count(hook.plan)
            status = None if records > limit else validate.main([*self.application_args, "--in-process"])
        if status is None:
            self.log.info("%d copied records to compare, above validation.in_process_max_records = %d: "
                          "submitting to Spark", records, limit)
            return False
        self.log.info("%d copied records compared in this task, without Spark (at most "
                      "validation.in_process_max_records = %d)", records, limit)
        if status != 0:
            raise AirflowException(f"validation of plan '{hook.plan.name}' ended with status {status} "
                                   f"({'the copy is not clean' if status == 1 else 'see the log'}): the report "
                                   f"names each partition and offset")
        return True


@contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """These variables set while the block runs, then put back as they were."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
