"""What a migration run selects: its `stages` param lists the stages to run (tasks of other stages skip); its
`groups` param the groups to switch, and `groups_per_task` how many of them one task switches."""

from __future__ import annotations

import math
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


GROUPS_PER_TASK = 25  # the most groups one task of the switch_groups stage switches, unless a run says otherwise
SPREAD = 4  # the fewest tasks a stage of more groups than this is spread over (the executor's slots run them)


def group_batches(groups: list[str], per_task: int | str | None = None) -> list[list[str]]:
    """The groups in the batches the switch_groups stage maps a task over: at most `per_task` groups each (25
    when not given), over at least `SPREAD` tasks when there are that many groups, in their order."""
    most = max(1, int(per_task or GROUPS_PER_TASK))
    size = min(most, max(1, math.ceil(len(groups) / SPREAD)))
    return [groups[start:start + size] for start in range(0, len(groups), size)]
