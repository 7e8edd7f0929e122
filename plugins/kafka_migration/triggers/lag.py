"""Deferrable wait until a flow's replication lag is at or below a threshold (runs in the triggerer)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent


def current_lag(plan_path: str) -> dict[str, int]:
    """{"topic[partition]": records not yet copied} for the plan's flow."""
    from kafka_migration.hooks.plan import MigrationPlanHook
    from mirror_engine.status import replication_lag

    hook = MigrationPlanHook(plan_path)
    lag = replication_lag(hook.plan, *hook.client_configs())
    return {f"{topic}[{partition}]": n for (topic, partition), n in sorted(lag.items())}


class ReplicationLagTrigger(BaseTrigger):
    """Fires {"status": "ok", "lag": n} once the flow's total lag is <= max_lag records, or
    {"status": "timeout", ...} after timeout_s, with the partitions still behind."""

    def __init__(self, plan_path: str, max_lag: int, timeout_s: float, poll_interval_s: float = 2.0) -> None:
        super().__init__()
        self.plan_path = plan_path
        self.max_lag = max_lag
        self.timeout_s = timeout_s
        self.poll_interval_s = poll_interval_s

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return ("kafka_migration.triggers.lag.ReplicationLagTrigger", {
            "plan_path": self.plan_path, "max_lag": self.max_lag, "timeout_s": self.timeout_s,
            "poll_interval_s": self.poll_interval_s,
        })

    async def run(self) -> AsyncIterator[TriggerEvent]:
        deadline = time.monotonic() + self.timeout_s
        while True:
            lag = await asyncio.to_thread(current_lag, self.plan_path)
            total = sum(lag.values())
            if total <= self.max_lag:
                yield TriggerEvent({"status": "ok", "lag": total})
                return
            if time.monotonic() >= deadline:
                behind = {k: v for k, v in lag.items() if v}
                yield TriggerEvent({"status": "timeout", "lag": total, "behind": dict(list(behind.items())[:20])})
                return
            await asyncio.sleep(self.poll_interval_s)
