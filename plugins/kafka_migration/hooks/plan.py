"""A migration plan as Airflow tasks see it: the plan file, and client settings from Airflow connections."""

from __future__ import annotations

import json
from functools import cached_property
from pathlib import Path
from typing import Any

from kafka_migration.hooks.cluster import KafkaClusterHook, mask_client_secrets
from mirror_engine.mm2 import PlanReference
from mirror_engine.plan import ClusterSpec, MigrationPlan, render_client_config


class MigrationPlanHook:
    """Loads a plan (a YAML file, or a flow of an MM2 file: `PlanReference`); each cluster's settings come from its
    Airflow connection (`conn_id`) or the plan itself."""

    def __init__(self, plan_path: str) -> None:
        self.plan_path = plan_path

    @cached_property
    def plan(self) -> MigrationPlan:
        return PlanReference.parse(self.plan_path).load()

    @staticmethod
    def _config(spec: ClusterSpec) -> dict[str, str]:
        # Settings from the plan (with `${ENV}` secrets resolved) are masked as a connection's are.
        return KafkaClusterHook(spec.conn_id).client_config() if spec.conn_id else mask_client_secrets(
            spec.client_config())

    def raw_client_configs(self) -> tuple[dict[str, str], dict[str, str]]:
        """The settings as written (connection extras or plan), for a child process to read again."""
        return self._config(self.plan.source), self._config(self.plan.target)

    def client_configs(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """confluent-kafka settings rendered from the security model; refused settings fail here."""
        source, target = self.raw_client_configs()
        where = {spec.alias: (f"connection '{spec.conn_id}' extra" if spec.conn_id else "client")
                 for spec in (self.plan.source, self.plan.target)}
        return (render_client_config(self.plan.source.alias, source, where[self.plan.source.alias]),
                render_client_config(self.plan.target.alias, target, where[self.plan.target.alias]))

    def process_env(self) -> dict[str, str]:
        """Environment for a process started for this plan (engine, spark-submit): the settings as JSON, so
        secrets travel in the child's environment, never on a command line, in a file or in the log."""
        source, target = self.raw_client_configs()
        return {"MIRROR_ENGINE_SOURCE_CONFIG": json.dumps(source), "MIRROR_ENGINE_TARGET_CONFIG": json.dumps(target)}

    def job_env(self, directory: Path) -> tuple[dict[str, str], list[Path]]:
        """Environment and files for a Spark job that may run on other machines: each cluster's TLS material
        staged in `directory` (mode 0700) and named there by relative names (`mirror_engine.security.job_files`);
        the job ships the files with `--files` and runs in `directory`. Refused settings fail here."""
        from mirror_engine.plan import PlanError
        from mirror_engine.security import SecurityError, stage_job_files

        self.client_configs()  # refusals named as for every other task
        env, files = {}, []
        for side, spec, config in zip(("source", "target"), (self.plan.source, self.plan.target),
                                      self.raw_client_configs(), strict=True):
            try:
                staged = stage_job_files(spec.alias, config, directory, side)
            except SecurityError as error:
                raise PlanError(f"cluster '{spec.alias}'", error.problems) from None
            env[f"MIRROR_ENGINE_{side.upper()}_CONFIG"] = json.dumps(mask_client_secrets(staged.config))
            files += staged.files
        return env, files


def load_plan_or_fail(plan_path: str) -> MigrationPlanHook:
    """A hook whose plan is loaded now, so that a bad plan fails the task at once with every problem listed."""
    from airflow.sdk.exceptions import AirflowFailException

    from mirror_engine.plan import PlanError

    hook = MigrationPlanHook(plan_path)
    try:
        hook.plan  # noqa: B018 - loads and validates it
    except PlanError as error:
        raise AirflowFailException(str(error)) from None
    return hook
