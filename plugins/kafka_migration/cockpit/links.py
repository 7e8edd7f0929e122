"""Extra links from a migration's tasks to the cockpit page that shows what they did."""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseOperatorLink

PREFIX = "/kafka-migrations/"
NAV_ROUTE = "kafka-migrations"  # the nav entry's route in the UI: /plugin/<route>/<path> shows <path> in its frame
IN_UI = f"/plugin/{NAV_ROUTE}"


def plan_of(dag_id: str) -> str | None:
    """The plan a migration or validation DAG was built from (None for the shared DAGs)."""
    for dag_prefix in ("kafka_migration__", "kafka_migration_validate__"):
        if dag_id.startswith(dag_prefix):
            return dag_id.removeprefix(dag_prefix)
    return None


class CockpitLink(BaseOperatorLink):
    """A link to one page of the task's plan in the cockpit, shown inside the Airflow UI (its navigation
    around the cockpit's frame); the cockpit's overview for the shared DAGs."""

    name = "Migration"
    page = ""

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        plan = plan_of(ti_key.dag_id)
        return IN_UI + (f"{PREFIX}plans/{plan}{self.page}" if plan else PREFIX)


class SwitchReportLink(CockpitLink):
    name = "Switch report"
    page = "/cutover"


class ValidationReportLink(CockpitLink):
    name = "Validation report"
    page = "/validations"
