"""Wait (deferred) until the plan's groups are in sync on the target: what a checkpoint sync should reach."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from airflow.sdk import BaseSensorOperator
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from kafka_migration.stages import skip_unless_selected
from kafka_migration.triggers.checkpoints import CheckpointsInSyncTrigger


class CheckpointsInSyncSensor(BaseSensorOperator):
    template_fields = ("plan_path", "groups", "wait_timeout_s")

    def __init__(self, *, plan_path: str, groups: list[str] | str, wait_timeout_s: float | str = 1800,
                 stage: str = "checkpoints", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.plan_path, self.groups, self.wait_timeout_s, self.stage = plan_path, groups, wait_timeout_s, stage

    def execute(self, context: Any) -> None:
        skip_unless_selected(self.stage, context)
        groups = [self.groups] if isinstance(self.groups, str) else list(self.groups)
        if not groups:
            raise AirflowSkipException("no groups to wait for")
        timeout = float(self.wait_timeout_s)
        self.defer(trigger=CheckpointsInSyncTrigger(self.plan_path, groups, timeout),
                   method_name="execute_complete", timeout=timedelta(seconds=timeout + 60))

    def execute_complete(self, context: Any, event: dict[str, Any]) -> None:
        if event["status"] != "ok":
            raise AirflowFailException(f"groups not in sync on the target after {self.wait_timeout_s} s: "
                                       f"{event['behind']} (is checkpoint sync running, and the engine?)")
        self.log.info("groups in sync on the target: %s", event["groups"])
