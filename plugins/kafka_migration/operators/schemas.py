"""The target registry's preparation: the subjects of the plan's topics moved from the source registry (dry-run
first, in the log), as `mirror-engine schemas` does."""

from __future__ import annotations

from typing import Any

from airflow.sdk.exceptions import AirflowFailException

from kafka_migration.operators.migration import MigrationOperator
from kafka_migration.params import flag


class PrepareSchemasOperator(MigrationOperator):
    """Every version of the topics' subjects in order, references first, and compatibility: `prepare.schemas`.
    A subject that cannot move fails the task with its sentence (the others moved); a plan whose choice of ids the
    target cannot keep fails it before any change."""

    stage = "prepare"
    template_fields = ("plan_path", "dry_run")

    def __init__(self, *, dry_run: bool | str = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.dry_run = dry_run

    def run(self, context: Any) -> dict:
        from mirror_engine.prepare import prepare_schemas
        from mirror_engine.schemas import RegistryError

        hook = self.hook()
        source_config, target_config = hook.client_configs()
        try:
            planned = prepare_schemas(hook.plan, source_config, apply=False)
            self.log.info("the target registry's changes:\n%s", "\n".join(planned.lines()))
            if planned.plan.refused:
                raise AirflowFailException(f"nothing changed: {planned.plan.refused}")
            if flag(self.dry_run):
                return {"subjects": len(planned.subjects), "dry_run": True}
            applied = prepare_schemas(hook.plan, source_config, apply=True, target_config=target_config)
        except RegistryError as error:
            raise AirflowFailException(str(error)) from None
        self.log.info("%s", "\n".join(applied.lines()))
        if applied.refused:
            raise AirflowFailException(f"{len(applied.refused)} subject(s) could not move:\n  "
                                       + "\n  ".join(applied.refused))
        return {"subjects": len(applied.subjects), "versions": applied.plan.versions, "dry_run": False}
