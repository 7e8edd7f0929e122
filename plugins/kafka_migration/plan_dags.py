"""Where the migration plans live and what their DAGs are called: decided here once, for the DAG files that build
the DAGs and for the cockpit that finds them again.

The plans folder is `$KAFKA_MIGRATION_PLANS`, else the project's `migrations/`: YAML plans (`*.yaml`) and
MirrorMaker 2 files (`*.properties`), each flow an MM2 file enables a plan of its own (`mm2.properties#a->b`,
named `a-to-b`). A plan named `shop` gets the DAG `kafka_migration__shop` (its migration),
`kafka_migration_validate__shop` (its validation alone) and, under the identity policy,
`kafka_migration_failback__shop` (its way back after the cutover).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mirror_engine.plan import MigrationPlan

PLANS_VARIABLE = "KAFKA_MIGRATION_PLANS"
DEFAULT_PLANS = Path(__file__).resolve().parents[2] / "migrations"
MIGRATION_DAG_PREFIX = "kafka_migration__"
VALIDATION_DAG_PREFIX = "kafka_migration_validate__"
FAILBACK_DAG_PREFIX = "kafka_migration_failback__"


def plans_folder() -> Path:
    """The folder of the migration plans, read from the environment at each call."""
    return Path(os.environ.get(PLANS_VARIABLE, DEFAULT_PLANS))


def plan_files(folder: Path) -> list[Path]:
    """The folder's plan files, YAML plans and MM2 files, by name."""
    from mirror_engine.mm2 import MM2_SUFFIX

    return sorted([*folder.glob("*.yaml"), *folder.glob(f"*{MM2_SUFFIX}")])


def read_plan_file(plan_file: Path) -> dict[str, MigrationPlan]:
    """{plan reference: plan} of one file: its plan, or each flow an MM2 file enables (a file whose flows loop is
    refused whole). Raises PlanError with every problem; an MM2 file's warnings are left to the tasks' logs."""
    from mirror_engine.mm2 import MM2_SUFFIX, flow_references, read_mm2_flows
    from mirror_engine.plan import load_plan

    if plan_file.suffix != MM2_SUFFIX:
        return {str(plan_file): load_plan(plan_file)}
    plans = [imported.plan for imported in read_mm2_flows(plan_file)]
    return {str(reference): plan for reference, plan in zip(flow_references(plan_file, plans), plans, strict=True)}


def migration_dag_id(plan_name: str) -> str:
    return f"{MIGRATION_DAG_PREFIX}{plan_name}"


def validation_dag_id(plan_name: str) -> str:
    return f"{VALIDATION_DAG_PREFIX}{plan_name}"


def failback_dag_id(plan_name: str) -> str:
    return f"{FAILBACK_DAG_PREFIX}{plan_name}"


def plan_of(dag_id: str) -> str | None:
    """The plan a migration or validation DAG was built from, or the way back's plan (`<plan>-failback`) of a way
    back's DAG; None for the shared DAGs."""
    for prefix in (MIGRATION_DAG_PREFIX, VALIDATION_DAG_PREFIX):
        if dag_id.startswith(prefix):
            return dag_id.removeprefix(prefix)
    if dag_id.startswith(FAILBACK_DAG_PREFIX):
        from mirror_engine.failback import FAILBACK_SUFFIX

        return dag_id.removeprefix(FAILBACK_DAG_PREFIX) + FAILBACK_SUFFIX
    return None
