"""Topic config and ACL sync at their own intervals, beside the copy (MM2's `sync.topic.configs.interval.seconds`
and `sync.topic.acls.interval.seconds`).

The engine syncs ACLs at each of its refreshes (`engine.refresh_interval_s`), and configs at a refresh every
`sync.configs_interval_s` (`TargetUpkeep.configs_due`), as part of target preparation. A plan whose
`sync.configs_interval_s` or `sync.acls_interval_s` is shorter than the refresh's gets them synced that often too,
by these tasks.
A task applies only its own kind of change (config changes, or ACL creations), and nothing while the target has
a problem for the plan (the engine's refresh then reports it and applies nothing either).
"""

from __future__ import annotations

import logging
from typing import Literal

from mirror_engine.flow import managed_target_topics
from mirror_engine.plan import MigrationPlan
from mirror_engine.prepare import ApplyResult, PreparePlan, TargetConfigs, prepare_target, render_result
from mirror_engine.scheduler import PeriodicTask

log = logging.getLogger(__name__)

__all__ = ["metadata_sync_tasks", "sync_once"]

_ACTION = {"configs": "alter_configs", "acls": "create_acl"}


def sync_once(plan: MigrationPlan, source_config: dict[str, str], target_config: dict[str, str],
              kind: Literal["configs", "acls"], target_configs: TargetConfigs | None = None) -> ApplyResult | None:
    """Apply the target's pending changes of one kind; None when there was nothing to do or a problem. Pass the
    same `target_configs` each time: the target is then asked about each source config once."""
    only = plan.model_copy(update={"sync": plan.sync.model_copy(update={
        "configs": plan.sync.configs and kind == "configs", "acls": plan.sync.acls and kind == "acls"})})
    preparation = prepare_target(only, source_config, target_config, apply=True,
                                 managed_topics=managed_target_topics(plan, target_config), best_effort=True,
                                 target_configs=target_configs, kinds={_ACTION[kind]},
                                 on_planned=lambda prepared: _log_planned(plan, kind, prepared),
                                 on_applied=lambda result: log.info("%s sync: %s", kind, render_result(result)))
    return preparation.applied


def _log_planned(plan: MigrationPlan, kind: str, prepared: PreparePlan) -> None:
    for warning in prepared.warnings:
        log.warning("%s sync: %s", kind, warning)
    if prepared.problems:
        log.warning("%s sync skipped: the target has %d problem(s) for plan '%s': %s", kind, len(prepared.problems),
                    plan.name, "; ".join(prepared.problems))


def metadata_sync_tasks(plan: MigrationPlan, source_config: dict[str, str],
                        target_config: dict[str, str]) -> list[PeriodicTask]:
    """The config and ACL sync tasks the plan needs beside the engine's refreshes (none, one or two)."""
    kinds: tuple[tuple[Literal["configs", "acls"], bool, float | None], ...] = (
        ("configs", plan.sync.configs, plan.sync.configs_interval_s),
        ("acls", plan.sync.acls, plan.sync.acls_interval_s))
    return [_task(plan, source_config, target_config, kind, interval) for kind, enabled, interval in kinds
            if enabled and interval is not None and interval < plan.engine.refresh_interval_s]


def _task(plan: MigrationPlan, source_config: dict[str, str], target_config: dict[str, str],
          kind: Literal["configs", "acls"], interval_s: float) -> PeriodicTask:
    known = TargetConfigs()

    def run() -> None:
        sync_once(plan, source_config, target_config, kind, known)

    # The engine's first refresh, as the copy starts, syncs both: the first sync here is one interval later.
    return PeriodicTask(f"{kind} sync", interval_s, run, first_after_s=interval_s)
