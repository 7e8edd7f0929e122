"""`prepare_target`: the one home of the sequence read both clusters -> plan the actions -> dry-run -> apply.

Every front end runs it: the CLI's `plan` and `prepare`, the Airflow preflight and prepare tasks, the engine's
upkeep at start and at each refresh, and the config and ACL sync beside the copy. They differ only in how far
they go (`dry_run`, `apply`), in which actions they apply (`kinds`) and in how they tell a person what happened
(the `on_*` callbacks, called as each step ends); the order of the steps and where the sequence stops are the
same for all:

1. read both clusters and compute the actions (`plan_preparation`), plus any problems the caller adds;
2. stop, applying nothing, while there is any problem;
3. stop when there is nothing (of `kinds`) to do: no request is sent to the target;
4. with `dry_run`, the target validates the actions and changes nothing; stop if it refused any;
5. with `apply`, apply them in order (topics, partitions, configs, ACLs).

With `internal_topics` (and no `kinds`), the flow's internal topics missing on the target are created in the
same request as the target topics (validated with them in a dry-run). A broker creating thousands of partitions
makes topics created after that burst visible only once it has created the burst's logs, so the engine started
right after a large `prepare` would otherwise wait tens of seconds for the internal topics it creates itself.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection
from dataclasses import dataclass

from mirror_engine.flow import managed_target_topics
from mirror_engine.kafka import ClusterInfo, TopicListing
from mirror_engine.plan import MigrationPlan
from mirror_engine.prepare.actions import Action, ApplyResult, PreparePlan
from mirror_engine.prepare.applying import apply_actions
from mirror_engine.prepare.reading import ManagedTopics, plan_preparation
from mirror_engine.prepare.target_configs import TargetConfigs


@dataclass
class Preparation:
    """What `prepare_target` did: the planned actions (with the problems that stopped it, if any), the target's
    dry-run of the actions and their application, each None where the sequence did not get that far."""

    prepared: PreparePlan
    actions: list[Action]  # those of `kinds`: what was (or would have been) validated and applied
    checked: ApplyResult | None = None
    applied: ApplyResult | None = None

    @property
    def refused(self) -> bool:
        """Stopped by problems before anything was sent to the target."""
        return bool(self.prepared.problems)

    @property
    def failed(self) -> list[tuple[Action, str]]:
        """The changes the target refused, in the dry-run or when applied."""
        return [*(self.checked.failed if self.checked else []), *(self.applied.failed if self.applied else [])]


def prepare_target(
    plan: MigrationPlan,
    source_config: dict[str, str],
    target_config: dict[str, str],
    *,
    dry_run: bool = False,
    apply: bool = False,
    managed_topics: ManagedTopics | None = None,
    best_effort: bool = False,
    target_configs: TargetConfigs | None = None,
    clusters: tuple[ClusterInfo, ClusterInfo] | None = None,
    kinds: Collection[str] | None = None,
    internal_topics: bool = True,
    ends_of_managed: bool = False,
    configs_of_existing: bool = True,
    list_source: Callable[[], TopicListing] | None = None,
    more_problems: Callable[[PreparePlan], list[str]] | None = None,
    on_planned: Callable[[PreparePlan], None] | None = None,
    on_checked: Callable[[ApplyResult], None] | None = None,
    on_applied: Callable[[ApplyResult], None] | None = None,
) -> Preparation:
    """Read, plan, dry-run (`dry_run`) and apply (`apply`) the target's changes for `plan`; see the module doc.

    `managed_topics` are the target topics the flow already copies into (`ManagedTopics`; read from its stored
    progress, beside both clusters' state, when not given). `best_effort`, `target_configs`, `clusters`,
    `ends_of_managed`, `configs_of_existing` and `list_source` are `plan_preparation`'s. `kinds` keeps only actions
    of those kinds ("create_topic", "add_partitions", "alter_configs", "create_acl"); `internal_topics` (without
    `kinds`) creates the flow's internal topics that are missing with them. `more_problems` adds the caller's own
    reasons to refuse (they join `prepared.problems`). `on_planned` sees the plan (problems included) before
    anything is sent to the target; `on_checked` the dry-run's result, `on_applied` the application's.
    """
    managed = functools.partial(managed_target_topics, plan, target_config) if managed_topics is None \
        else managed_topics
    prepared = plan_preparation(plan, source_config, target_config, managed, best_effort=best_effort,
                                target_configs=target_configs, clusters=clusters, ends_of_managed=ends_of_managed,
                                configs_of_existing=configs_of_existing, list_source=list_source)
    if more_problems is not None:
        prepared.problems += more_problems(prepared)
    actions = [action for action in prepared.actions if kinds is None or action.kind in kinds]
    internal = prepared.internal_topics if internal_topics and kinds is None else {}
    done = Preparation(prepared, actions)
    if on_planned is not None:
        on_planned(prepared)
    if prepared.problems or not (actions or internal):
        return done
    if dry_run:
        done.checked = apply_actions(target_config, actions, validate_only=True, internal_topics=internal)
        if on_checked is not None:
            on_checked(done.checked)
        if done.checked.failed:
            return done
    if apply:
        done.applied = apply_actions(target_config, actions, internal_topics=internal)
        if on_applied is not None:
            on_applied(done.applied)
    return done
