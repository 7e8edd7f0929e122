"""Wait until a flow has copied everything but `max_lag` records: deferred to the triggerer."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from airflow.sdk import BaseSensorOperator
from airflow.sdk.exceptions import AirflowFailException

from kafka_migration.stages import skip_unless_selected
from kafka_migration.triggers.lag import ReplicationLagTrigger


class ReplicationLagSensor(BaseSensorOperator):
    template_fields = ("plan_path", "max_lag", "wait_timeout_s")

    def __init__(self, *, plan_path: str, max_lag: int | str = 0, wait_timeout_s: float | str = 1800,
                 stage: str = "replicate", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.plan_path = plan_path
        self.stage = stage
        self.max_lag = max_lag
        self.wait_timeout_s = wait_timeout_s

    def execute(self, context: Any) -> None:
        skip_unless_selected(self.stage, context)
        timeout = float(self.wait_timeout_s)
        self.defer(trigger=ReplicationLagTrigger(self.plan_path, int(self.max_lag), timeout),
                   method_name="execute_complete", timeout=timedelta(seconds=timeout + 60))

    def execute_complete(self, context: Any, event: dict[str, Any]) -> int:
        if event["status"] == "failed":
            raise AirflowFailException(
                f"the flow's engines report partitions they cannot copy (lag {event['lag']} records):\n  "
                + "\n  ".join(event["problems"]))
        if event["status"] != "ok":
            running = ("no engine of the flow publishes its status: is one running (task replicate.start, or "
                       "`mirror-engine worker`)?" if not event.get("live_workers")
                       else f"{event['live_workers']} engine(s) of the flow are running")
            raise AirflowFailException(
                f"replication lag still {event['lag']} records (> {self.max_lag}) after {self.wait_timeout_s} s; "
                f"partitions behind: {event.get('behind')}. {running}")
        self.log.info("replication lag %d records (<= %s)", event["lag"], self.max_lag)
        return int(event["lag"])
