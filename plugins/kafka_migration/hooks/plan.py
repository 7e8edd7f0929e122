"""A migration plan as Airflow tasks see it: the plan file, and client settings from Airflow connections."""

from __future__ import annotations

import json
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_migration.hooks.cluster import KafkaClusterHook, mask_client_secrets
from kafka_migration.hooks.registry import SchemaRegistryHook
from mirror_engine.mm2 import PlanReference
from mirror_engine.plan import ClusterSpec, MigrationPlan, render_client_config

if TYPE_CHECKING:
    from mirror_engine.failback import Failback


class MigrationPlanHook:
    """Loads a plan (a YAML file, or a flow of an MM2 file: `PlanReference`); each cluster's settings come from its
    Airflow connection (`conn_id`) or the plan itself. A way back (`#failback`) is built from its forward plan and
    what that plan's target holds (`mirror_engine.failback`): its clusters are the forward plan's, swapped."""

    def __init__(self, plan_path: str) -> None:
        self.plan_path = plan_path
        self.reference = PlanReference.parse(plan_path)

    @cached_property
    def failback(self) -> Failback | None:
        """The way back of the referenced plan, for a `#failback` reference; None otherwise."""
        if not self.reference.failback:
            return None
        from mirror_engine.failback import Failback

        forward = self.reference.load()
        return Failback(forward, *self._rendered(forward))

    @cached_property
    def plan(self) -> MigrationPlan:
        """The plan, its registries' Airflow connections read into their url and client settings (so every task,
        sensor and trigger of it reaches the registries as the plan names them)."""
        plan = self.failback.plan if self.failback is not None else self.reference.load()
        schemas = plan.schemas
        if schemas is None or not (schemas.source.conn_id or schemas.target.conn_id):
            return plan
        sides = {}
        for side in ("source", "target"):
            spec = getattr(schemas, side)
            if spec.conn_id:
                settings = SchemaRegistryHook(spec.conn_id).settings()
                url = settings.pop("url")
                spec = spec.model_copy(update={"url": url, "client": settings})
            sides[side] = spec
        return plan.model_copy(update={"schemas": schemas.model_copy(update=sides)})

    def registry_env(self) -> dict[str, str]:
        """The registries' settings as JSON for a child process, which reads its plan file again (empty without
        registries)."""
        if self.plan.schemas is None:
            return {}
        source, target = self.plan.schemas.registry_settings()
        return {"MIRROR_ENGINE_SOURCE_REGISTRY": json.dumps(mask_client_secrets(source)),
                "MIRROR_ENGINE_TARGET_REGISTRY": json.dumps(mask_client_secrets(target))}

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
        return self._rendered(self.plan)

    def _rendered(self, plan: MigrationPlan) -> tuple[dict[str, Any], dict[str, Any]]:
        where = {spec.alias: (f"connection '{spec.conn_id}' extra" if spec.conn_id else "client")
                 for spec in (plan.source, plan.target)}
        return (render_client_config(plan.source.alias, self._config(plan.source), where[plan.source.alias]),
                render_client_config(plan.target.alias, self._config(plan.target), where[plan.target.alias]))

    def process_env(self) -> dict[str, str]:
        """Environment for a process started for this plan (engine, spark-submit): the settings as JSON, so
        secrets travel in the child's environment, never on a command line, in a file or in the log."""
        source, target = self.raw_client_configs()
        if self.failback is not None:  # the child builds the way back from the forward plan, whose clusters these name
            source, target = target, source
        return {"MIRROR_ENGINE_SOURCE_CONFIG": json.dumps(source), "MIRROR_ENGINE_TARGET_CONFIG": json.dumps(target),
                **self.registry_env()}

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
        return {**env, **self.registry_env()}, files


def load_plan_or_fail(plan_path: str) -> MigrationPlanHook:
    """A hook whose plan is loaded now, so that a bad plan fails the task at once with every problem listed."""
    from airflow.sdk.exceptions import AirflowFailException

    from mirror_engine.failback import FailbackError
    from mirror_engine.plan import PlanError

    hook = MigrationPlanHook(plan_path)
    try:
        hook.plan  # noqa: B018 - loads and validates it
    except (PlanError, FailbackError) as error:
        raise AirflowFailException(str(error)) from None
    return hook
