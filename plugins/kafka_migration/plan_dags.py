"""Where the migration plans live and what their DAGs are called: decided here once, for the DAG files that build
the DAGs and for the cockpit that finds them again.

The plans folder is `$KAFKA_MIGRATION_PLANS`, else the project's `migrations/`. A plan named `shop` gets the DAG
`kafka_migration__shop` (its migration) and `kafka_migration_validate__shop` (its validation alone).
"""

from __future__ import annotations

import os
from pathlib import Path

PLANS_VARIABLE = "KAFKA_MIGRATION_PLANS"
DEFAULT_PLANS = Path(__file__).resolve().parents[2] / "migrations"
MIGRATION_DAG_PREFIX = "kafka_migration__"
VALIDATION_DAG_PREFIX = "kafka_migration_validate__"


def plans_folder() -> Path:
    """The folder of the migration plans (`*.yaml`), read from the environment at each call."""
    return Path(os.environ.get(PLANS_VARIABLE, DEFAULT_PLANS))


def migration_dag_id(plan_name: str) -> str:
    return f"{MIGRATION_DAG_PREFIX}{plan_name}"


def validation_dag_id(plan_name: str) -> str:
    return f"{VALIDATION_DAG_PREFIX}{plan_name}"


def plan_of(dag_id: str) -> str | None:
    """The plan a migration or validation DAG was built from (None for the shared DAGs)."""
    for prefix in (MIGRATION_DAG_PREFIX, VALIDATION_DAG_PREFIX):
        if dag_id.startswith(prefix):
            return dag_id.removeprefix(prefix)
    return None
