"""The Spark jobs of a migration through the Spark provider's SparkSubmitOperator.

The master comes from the Spark connection (`spark_conn_id`; local[2] in the demo). spark-submit
resolves the Kafka connector (`--packages`, coordinates from `spark_jobs.packages`) when the task runs, not when
the DAG is parsed, and the clusters' settings reach the job in its environment (never on the spark-submit
command line, which is logged). Their TLS files (CA, client certificate and key, inline PEM from a connection
included) are staged in a private directory of this task (0700, files 0600, removed when the task ends) and
shipped with `spark-submit --files`, so that executors on other machines get them; spark-submit runs in that
directory, where the driver finds them under the same relative names as the executors
(`mirror_engine.security.job_files`).
The JVM heaps come from the plan (`backfill.spark_driver_memory`, `backfill.spark_executor_memory`: 2g, as a
local session's) unless the task is given `driver_memory` or `executor_memory` itself.
A validation of a copy of at most `validation.in_process_max_records` records runs in the task itself,
without Spark (`validate.py --in-process`): a Spark application's start would take most of the stage.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowSkipException

from kafka_migration.cockpit.links import ValidationReportLink
from kafka_migration.hooks.plan import MigrationPlanHook
from kafka_migration.stages import skip_unless_selected
from mirror_engine.security import secret_values

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
        self._job_dir: str | None = None

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
        # The plan's JVM heaps (2g by default, as a local session's), unless this task was given its own.
        self._driver_memory = self._driver_memory or hook.plan.backfill.spark_driver_memory
        self._executor_memory = self._executor_memory or hook.plan.backfill.spark_executor_memory
        self.packages, self.exclude_packages = ",".join(packages.packages), ",".join(packages.excludes)
        self.conf = {**(self.conf or {}), "spark.jars.ivy": packages.conf()["spark.jars.ivy"]}
        job_dir = tempfile.mkdtemp(prefix="mirror-engine-job-")  # mode 0700
        try:
            env, files = hook.job_env(Path(job_dir))
            if files:
                self.files = ",".join([*filter(None, [self.files]), *map(str, files)])
                self._job_dir = job_dir
                self.application_args = _absolute_paths(self.application_args or [])
                if self.stage == "validate" and "--report-dir" not in self.application_args:
                    self.application_args += ["--report-dir", os.path.abspath(hook.plan.validation.report_dir)]
                self.log.info("the clusters' TLS files go to the executors with --files: %s",
                              ", ".join(f.name for f in files))
            # PYSPARK_PYTHON: a local driver's Python workers run this interpreter, which has the project's packages.
            self.env_vars = {"PYSPARK_PYTHON": sys.executable, **(self.env_vars or {}), **env}
            super().execute(context)
        finally:
            shutil.rmtree(job_dir, ignore_errors=True)

    def _get_hook(self) -> SparkSubmitHook:
        hook = super()._get_hook()
        if (hook._is_yarn or hook._is_kubernetes) and any(
                secret_values(json.loads(value)) for name, value in (self.env_vars or {}).items()
                if name.startswith("MIRROR_ENGINE_")):
            raise AirflowFailException(
                f"Spark connection '{self._conn_id}' submits to YARN or Kubernetes, where the Spark provider passes "
                "the job's environment as --conf on the spark-submit command line, and the clusters' settings hold "
                "secrets: use a spark:// or local master for this job")
        if self._job_dir:  # spark-submit (and so the driver) runs where the staged files are
            hook.submit = functools.partial(hook.submit, cwd=self._job_dir)  # type: ignore[method-assign]
        return hook

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


def _absolute_paths(args: list[str]) -> list[str]:
    """The job's arguments with its file arguments made absolute (spark-submit runs in another directory)."""
    out = list(args)
    for i, arg in enumerate(out[:-1]):
        if arg in ("--plan", "--report-dir"):
            out[i + 1] = os.path.abspath(out[i + 1])
    return out


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
