"""The way back's own tasks: where each partition's copy back starts, said (preflight) or stored (prepare). Every
other task of the way back's DAG is the migration's own, given the way back's plan reference (`#failback`)."""

from __future__ import annotations

from typing import Any

from airflow.sdk.exceptions import AirflowFailException

from kafka_migration.operators.migration import MigrationOperator
from kafka_migration.params import flag


class _WayBackStart(MigrationOperator):
    dry_run: bool | str = True

    def run(self, context: Any) -> dict:
        from mirror_engine.failback import FailbackError

        way_back = self.hook().failback
        if way_back is None:
            raise AirflowFailException(f"{self.plan_path} names no way back (it ends without #failback)")
        try:
            preparation = way_back.prepare(dry_run=flag(self.dry_run))
        except FailbackError as error:
            raise AirflowFailException(str(error)) from None
        self.log.info("%s", preparation.render())
        return {"partitions": len(preparation.starts) + len(preparation.already_started),
                "records_back": sum(start.records_back for start in preparation.starts),
                "unfenced_topics": preparation.unfenced_topics, "dry_run": flag(self.dry_run)}


class FailbackPreflightOperator(_WayBackStart):
    """The way back is possible, and where each partition's copy back would start; nothing changed."""

    stage = "preflight"


class FailbackPrepareOperator(_WayBackStart):
    """Each partition's start stored on the forward source and its write fences lifted (`dry_run`: said only)."""

    stage = "prepare"
    template_fields = ("plan_path", "dry_run")

    def __init__(self, *, dry_run: bool | str = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.dry_run = dry_run
