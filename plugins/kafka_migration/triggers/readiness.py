"""One trigger for every wait of a migration: it polls a `mirror_engine.cutover.readiness` check in the triggerer."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

PROGRESS_EVERY_S = 30.0  # an unchanged progress line is repeated this often, so a quiet log still shows life


class ReadinessTrigger(BaseTrigger):
    """Polls the readiness check `check` of a plan until it is done, fails, or the deadline passes.

    The check (and its Kafka clients) is built once on the first poll and closed in `cleanup()`. Each new
    progress line, and an unchanged one every 30 s, goes to the task's log. The deadline is a wall-clock
    time, so a trigger re-created after a triggerer restart keeps the wait's original bound.

    Fires {"status": "ok", "progress": str, "detail": {...}}, {"status": "failed", "reason": str, "detail":
    {...}} or {"status": "timeout", "progress": str}.

    :param plan_path: the migration plan file.
    :param check: the name of the check in `mirror_engine.cutover.readiness.CHECKS`.
    :param arguments: the check's own keyword arguments (JSON-able).
    :param deadline: when to give up, in seconds since the epoch.
    :param poll_interval_s: seconds between two polls.
    """

    def __init__(self, plan_path: str, check: str, arguments: dict[str, Any], deadline: float,
                 poll_interval_s: float = 2.0) -> None:
        super().__init__()
        self.plan_path, self.check, self.arguments = plan_path, check, dict(arguments)
        self.deadline, self.poll_interval_s = deadline, poll_interval_s
        self._check: Any = None

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return ("kafka_migration.triggers.readiness.ReadinessTrigger", {
            "plan_path": self.plan_path, "check": self.check, "arguments": self.arguments,
            "deadline": self.deadline, "poll_interval_s": self.poll_interval_s,
        })

    def _open(self) -> Any:
        from kafka_migration.hooks.plan import MigrationPlanHook
        from mirror_engine.cutover import build_check

        hook = MigrationPlanHook(self.plan_path)
        return build_check(self.check, hook.plan, *hook.client_configs(), self.arguments)

    async def run(self) -> AsyncIterator[TriggerEvent]:
        self._check = await asyncio.to_thread(self._open)
        last_line, last_logged = "", 0.0
        while True:
            readiness = await asyncio.to_thread(self._check.check)
            if readiness.failed:
                yield TriggerEvent({"status": "failed", "reason": readiness.failed, "detail": readiness.detail})
                return
            if readiness.done:
                yield TriggerEvent({"status": "ok", "progress": readiness.progress, "detail": readiness.detail})
                return
            now = time.monotonic()
            if readiness.progress != last_line or now - last_logged >= PROGRESS_EVERY_S:
                self.log.info("%s", readiness.progress)
                last_line, last_logged = readiness.progress, now
            if time.time() >= self.deadline:
                yield TriggerEvent({"status": "timeout", "progress": readiness.progress})
                return
            await asyncio.sleep(self.poll_interval_s)

    async def cleanup(self) -> None:
        if self._check is not None:
            await asyncio.to_thread(self._check.close)
            self._check = None
