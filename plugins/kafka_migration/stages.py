"""What a migration run selects: its `stages` param lists the stages to run (tasks of other stages skip); its
`groups` param the groups to switch."""

from __future__ import annotations

from typing import Any

from airflow.sdk.exceptions import AirflowSkipException


def skip_unless_selected(stage: str, context: Any) -> None:
    """Raise a skip when the run selects stages and `stage` is not one (DAGs without the param run everything)."""
    stages = context["params"].get("stages")
    if stages is not None and stage not in stages:
        raise AirflowSkipException(f"stage '{stage}' not selected for this run (stages: {stages})")


def run_groups(params: dict[str, Any] | None, plan: Any) -> list[str]:
    """The groups a migration run switches: its `groups` param, or the plan's `cutover.groups` when the run gives
    none (null). The DAG's params leave the plan's list out, read here when a task runs: Airflow copies every
    param into each of the DAG's tasks at parse time, so a long list would cost every parse per group."""
    groups = (params or {}).get("groups")
    return list(plan.cutover.groups if groups is None else groups)
