"""The target kept ready while the engine runs: topics created or grown, configs and ACLs synced (at start and
at every refresh, so new matching topics and added partitions are copied too)."""

from __future__ import annotations

import logging
import time

from mirror_engine.plan import MigrationPlan
from mirror_engine.prepare import apply_actions, plan_preparation, render_actions
from mirror_engine.progress import managed_target_topics
from mirror_engine.replication.faults import EngineError

log = logging.getLogger("mirror_engine.engine")


class TargetUpkeep:
    def __init__(self, plan: MigrationPlan, source_config: dict[str, str], target_config: dict[str, str], *,
                 beside_others: bool) -> None:
        self.plan = plan
        self.source_config = source_config
        self.target_config = target_config
        # Other workers of the flow may prepare the same target at the same moment.
        self.beside_others = beside_others
        self._warned: set[str] = set()

    def prepare(self, managed: frozenset[str], initial: bool) -> list[str] | None:
        """Create or update the target's topics (idempotent); the plan's source topics, or None when it failed
        after the start (logged: the next refresh tries again)."""
        failures = ""
        for attempt in range(3):
            prepared = plan_preparation(self.plan, self.source_config, self.target_config, managed, best_effort=True)
            for warning in prepared.warnings:
                if warning not in self._warned:  # said once, not at every refresh
                    self._warned.add(warning)
                    log.warning("%s", warning)
            if prepared.problems and self.beside_others and attempt < 2:
                # Another worker of the flow may have just created a topic and copied into it: its progress
                # (committed within a progress interval) makes the topic the flow's. Look again after that.
                time.sleep(self.plan.engine.progress_interval_s + 1)
                managed |= managed_target_topics(self.plan, self.target_config)
                continue
            if prepared.problems:
                raise EngineError("the target is not ready for this plan:\n  " + "\n  ".join(prepared.problems))
            if not prepared.actions:
                return prepared.source_topics
            log.info("preparing the target:\n%s", render_actions(prepared.actions))
            result = apply_actions(self.target_config, prepared.actions)
            if not result.failed:
                return prepared.source_topics
            failures = "; ".join(f"{a.kind} {a.resource}: {e}" for a, e in result.failed)
            # Another worker of the flow may have made the same change a moment earlier: plan again. A topic
            # missing when planned and there now was created by one of them: it is the flow's, even if that
            # worker has already copied records into it.
            managed |= frozenset(action.resource for action, error in result.failed
                                 if action.kind == "create_topic" and "already exists" in error)
            log.info("preparing the target: %s; planning again", failures)
            time.sleep(1)
        message = f"preparing the target failed: {failures}"
        if initial:
            raise EngineError(message)
        log.error("%s", message)
        return None
