"""The target kept ready while the engine runs: topics created or grown and ACLs synced at start and at every
refresh, so new matching topics and added partitions are copied too; the configs of the topics the target has synced
at the first refresh, then every `sync.configs_interval_s` (at a refresh).

A topic the target refuses to create or grow does not stop the others: it is left out of the copy, named with
the target's reason in the log (once per reason) and the status (`Faults.blocked_topics`), and tried again at
every refresh, since its cause (a quota, a policy, a permission) may pass."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace

from mirror_engine.flow import managed_target_topics
from mirror_engine.kafka import ClusterInfo, ClusterState, TopicListing
from mirror_engine.plan import MigrationPlan
from mirror_engine.prepare import (
    Action,
    ManagedTopics,
    PreparePlan,
    TargetConfigs,
    managed_now,
    prepare_target,
    render_actions,
)
from mirror_engine.replication.faults import EngineError, Faults

log = logging.getLogger("mirror_engine.replication.engine")


class TargetUpkeep:
    def __init__(self, plan: MigrationPlan, source_config: dict[str, str], target_config: dict[str, str], *,
                 beside_others: bool, faults: Faults | None = None) -> None:
        self.plan = plan
        self.source_config = source_config
        self.target_config = target_config
        # Other workers of the flow may prepare the same target at the same moment.
        self.beside_others = beside_others
        self._warned: set[str] = set()
        self.faults = faults or Faults()
        self.target_configs = TargetConfigs()  # the target asked once per process about each source config
        # The target as the last preparation read it, without the topics it changed since: see `prepare`.
        self.target_read: ClusterState | None = None
        self._configs_read_at: float | None = None  # when a refresh last read every topic's configs (monotonic)

    def configs_due(self) -> bool:
        """Whether this refresh syncs the configs of the topics the target has: the first does, then one every
        `sync.configs_interval_s` (null: every one). Each reads every topic's configs on both clusters: at 1,000
        topics about 66 MiB as the brokers answer (librdkafka asks each entry's synonyms too), 0.6 s of this process's
        CPU, every `engine.refresh_interval_s` when read at each refresh (30 s by default) where MirrorMaker 2 reads
        them every 10 minutes. New topics get their configs as they are created, at any refresh."""
        interval = self.plan.sync.configs_interval_s
        if self._configs_read_at is None or interval is None:
            return True
        # Within half a refresh: refreshes every 30 s sync configs every 600 s, not every 630 s.
        return time.monotonic() - self._configs_read_at >= interval - self.plan.engine.refresh_interval_s / 2

    def prepare(self, managed: ManagedTopics, initial: bool, clusters: tuple[ClusterInfo, ClusterInfo] | None = None,
                list_source: Callable[[], TopicListing] | None = None) -> list[str] | None:
        """Create or update the target's topics (idempotent); the plan's source topics that can be copied (those
        whose target topic the target refused are left out, logged and in the status; the next refresh tries
        again). Problems that forbid any change raise at the start (`initial`). `clusters`: both clusters as just
        described by the caller (not asked again); `list_source`: how the caller lists the source's topics now
        (`plan_preparation`). At the start the ends of every target partition are read too, and
        what was read stays in `target_read` for the first assignment (the topics the preparation changed left out).

        At the start the source configs are read only of the topics to create, and the target's configs not at all:
        the configs of the target's topics are synced by the first refresh, which starts with the copy and runs beside
        it, then when due (`configs_due`); the record limits the copy needs of them are read beside the start, each
        topic's records held until its own limits are learned (`LimitsGate`). Read before the copy, they held up its
        first record (the configs of 1,000 topics, about 33 KiB each as the broker answers them, cost a third of a
        second of this process's CPU, shared with the start's other reads, and 1.3-1.5 s before the first record at
        10,000 partitions)."""
        failures = ""
        configs = not initial and self.configs_due()
        for attempt in range(3):
            reading = time.monotonic()
            preparation = prepare_target(self.plan, self.source_config, self.target_config, apply=True,
                                         managed_topics=managed, best_effort=True, target_configs=self.target_configs,
                                         clusters=clusters, internal_topics=False,  # the engine made them
                                         ends_of_managed=initial, configs_of_existing=configs,
                                         list_source=list_source if attempt == 0 else None,
                                         on_planned=self._planned)
            prepared, result = preparation.prepared, preparation.applied
            if configs:
                self._configs_read_at = reading
            self.target_read = _unchanged(prepared.target, preparation.actions) if result is None or \
                not result.failed else None
            if prepared.problems and self.beside_others and attempt < 2:
                # Another worker of the flow may have just created a topic and copied into it: its progress
                # (committed within a progress interval) makes the topic the flow's. Look again after that.
                time.sleep(self.plan.engine.progress_interval_s + 1)
                managed = managed_now(managed) | managed_target_topics(self.plan, self.target_config)
                continue
            if prepared.problems:
                raise EngineError("the target is not ready for this plan:\n  " + "\n  ".join(prepared.problems))
            if result is None or not result.failed:
                return self._copyable(prepared.source_topics, {})
            failures = "; ".join(f"{a.kind} {a.resource}: {e}" for a, e in result.failed)
            if not self.beside_others and not any("already exists" in error for _, error in result.failed):
                return self._copyable(prepared.source_topics, _blocked(result.failed), result.failed)
            # Another worker of the flow may have made the same change a moment earlier: plan again. A topic
            # missing when planned and there now was created by one of them: it is the flow's, even if that
            # worker has already copied records into it.
            managed = managed_now(managed) | frozenset(action.resource for action, error in result.failed
                                 if action.kind == "create_topic" and "already exists" in error)
            log.info("preparing the target: %s; planning again", failures)
            time.sleep(1)
        failed = result.failed if result is not None else []
        return self._copyable(prepared.source_topics, _blocked(failed), failed)

    def _planned(self, prepared: PreparePlan) -> None:
        """Warnings said once, not at every refresh; the changes about to be applied, when there are any."""
        for warning in [*prepared.warnings, *prepared.config_notes]:
            if warning not in self._warned:
                self._warned.add(warning)
                log.warning("%s", warning)
        if prepared.actions and not prepared.problems:
            log.info("preparing the target:\n%s", render_actions(prepared.actions))

    def _copyable(self, source_topics: list[str], blocked: dict[str, str],
                  failed: list[tuple[Action, str]] | None = None) -> list[str]:
        """The source topics to copy: all but those whose target topic could not be created or grown."""
        for action, error in failed or []:
            message = f"preparing the target: {action.kind} {action.resource} failed: {error}"
            if action.kind not in ("create_topic", "add_partitions") and message not in self._warned:
                self._warned.add(message)  # a config or ACL not synced: the topic is copied all the same
                log.error("%s (copying goes on; tried again at the next refresh)", message)
        for topic, reason in sorted(blocked.items()):
            if self.faults.blocked_topics.get(topic) != reason:  # said once per reason, not at every refresh
                log.error("topic %s is not copied: %s; the other topics are; tried again at the next refresh (every "
                          "%.0f s)", topic, reason, self.plan.engine.refresh_interval_s)
        for topic in sorted(set(self.faults.blocked_topics) - set(blocked)):
            log.info("topic %s: the target is ready for it now: copying it", topic)
        self.faults.blocked_topics = blocked
        return [topic for topic in source_topics if topic not in blocked]


def _unchanged(target: ClusterState | None, actions: list[Action]) -> ClusterState | None:
    """What was read of the target, without the topics the actions changed (their configs or partitions)."""
    if target is None:
        return None
    changed = {action.resource for action in actions if action.kind != "create_acl"}
    return replace(target, topics={name: state for name, state in target.topics.items() if name not in changed},
                   ends={key: end for key, end in target.ends.items() if key[0] not in changed})


def _blocked(failed: list[tuple[Action, str]]) -> dict[str, str]:
    """Source topics whose target topic the target refused to create or grow, with its reason."""
    return {
        action.details["source_topic"]: f"the target refused to {action.kind.replace('_', ' ')} "
                                        f"{action.resource}: {error}"
        for action, error in failed if action.kind in ("create_topic", "add_partitions")
    }
