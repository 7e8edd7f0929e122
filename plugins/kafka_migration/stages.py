"""Stage selection: a migration run's `stages` param lists the stages to run; tasks of other stages skip."""

from __future__ import annotations

from typing import Any

from airflow.sdk.exceptions import AirflowSkipException


def skip_unless_selected(stage: str, context: Any) -> None:
    """Raise a skip when the run selects stages and `stage` is not one (DAGs without the param run everything)."""
    stages = context["params"].get("stages")
    if stages is not None and stage not in stages:
        raise AirflowSkipException(f"stage '{stage}' not selected for this run (stages: {stages})")
