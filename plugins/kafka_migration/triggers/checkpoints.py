"""Deferrable wait until the target's group offsets are the exact translation of the source's (checkpoints in sync)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent


def groups_out_of_sync(plan_path: str, groups: list[str]) -> dict[str, str]:
    """{group: why it is not in sync} for the groups whose target offsets differ from the exact translation."""
    from kafka_migration.hooks.plan import MigrationPlanHook
    from mirror_engine.checkpoints import translate_group
    from mirror_engine.clusters import admin_client
    from mirror_engine.flow_mapping import FlowMapping
    from mirror_engine.groups import committed_offsets

    hook = MigrationPlanHook(plan_path)
    source_config, target_config = hook.client_configs()
    source_admin, target_admin = admin_client(source_config), admin_client(target_config)
    behind: dict[str, str] = {}
    with FlowMapping(hook.plan, target_config) as mapping:
        mapping.refresh()
        for group in groups:
            translation = translate_group(hook.plan, mapping, group, committed_offsets(source_admin, group))
            if translation.pending:
                behind[group] = f"{len(translation.pending)} partition(s) not copied up to the group's offsets yet"
                continue
            on_target = committed_offsets(target_admin, group)
            wrong = {f"{t}[{p}]": (on_target.get((t, p)), o) for (t, p), o in translation.translated.items()
                     if on_target.get((t, p)) != o}
            if wrong:
                behind[group] = f"target offsets differ (target, translated): {dict(list(wrong.items())[:5])}"
    return behind


class CheckpointsInSyncTrigger(BaseTrigger):
    """Fires {"status": "ok"} once every group's target offsets equal the translation of its source offsets,
    or {"status": "timeout", "behind": {...}} after timeout_s."""

    def __init__(self, plan_path: str, groups: list[str], timeout_s: float, poll_interval_s: float = 2.0) -> None:
        super().__init__()
        self.plan_path, self.groups = plan_path, list(groups)
        self.timeout_s, self.poll_interval_s = timeout_s, poll_interval_s

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return ("kafka_migration.triggers.checkpoints.CheckpointsInSyncTrigger", {
            "plan_path": self.plan_path, "groups": self.groups, "timeout_s": self.timeout_s,
            "poll_interval_s": self.poll_interval_s,
        })

    async def run(self) -> AsyncIterator[TriggerEvent]:
        deadline = time.monotonic() + self.timeout_s
        while True:
            behind = await asyncio.to_thread(groups_out_of_sync, self.plan_path, self.groups)
            if not behind:
                yield TriggerEvent({"status": "ok", "groups": self.groups})
                return
            if time.monotonic() >= deadline:
                yield TriggerEvent({"status": "timeout", "behind": behind})
                return
            await asyncio.sleep(self.poll_interval_s)
