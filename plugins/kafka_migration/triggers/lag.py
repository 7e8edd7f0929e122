"""Deferrable wait until a flow's replication lag is at or below a threshold (runs in the triggerer).

The lag comes from the flow's stored progress (exact whether or not engines run); the workers'
status topic tells whether they run and what they report broken, so a stopped partition fails the
wait at once instead of at its timeout."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent


def current_lag(plan_path: str) -> tuple[dict[str, int], list[str], int]:
    """({"topic[partition]": records not yet copied}, problems the workers report, live workers)."""
    from kafka_migration.hooks.plan import MigrationPlanHook
    from mirror_engine.status import flow_problems, is_live, read_worker_statuses, replication_lag

    hook = MigrationPlanHook(plan_path)
    source_config, target_config = hook.client_configs()
    lag = replication_lag(hook.plan, source_config, target_config)
    statuses = read_worker_statuses(hook.plan, target_config, window_s=120)
    live = sum(1 for status in statuses if is_live(status))
    return ({f"{topic}[{partition}]": n for (topic, partition), n in sorted(lag.items())}, flow_problems(statuses),
            live)


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
            lag, problems, live = await asyncio.to_thread(current_lag, self.plan_path)
            total = sum(lag.values())
            if total <= self.max_lag:
                yield TriggerEvent({"status": "ok", "lag": total})
                return
            behind = {k: v for k, v in lag.items() if v}
            if problems:
                yield TriggerEvent({"status": "failed", "lag": total, "problems": problems[:20]})
                return
            if time.monotonic() >= deadline:
                yield TriggerEvent({"status": "timeout", "lag": total, "behind": dict(list(behind.items())[:20]),
                                    "live_workers": live})
                return
            await asyncio.sleep(self.poll_interval_s)
