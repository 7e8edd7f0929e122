"""The plan of the way back: the forward plan's clusters swapped, its switched topics only, nothing prepared.

The way back is an ordinary flow from the forward target to the forward source, so every part of a flow serves it
unchanged (the engine, its progress and offset-syncs, the group and producer switches and their proofs, status,
the cockpit). What differs is what it copies and where it starts (`way_back`): the topics whose producers were
switched, each partition from the first record the forward copy did not write.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from mirror_engine.plan import MigrationPlan, PlanError, plan_from_dict

FAILBACK_SUFFIX = "-failback"


def failback_plan_name(plan: MigrationPlan) -> str:
    return f"{plan.name}{FAILBACK_SUFFIX}"


def failback_plan(plan: MigrationPlan, topics: Collection[str]) -> MigrationPlan:
    """The flow back of `plan` for `topics` (their names on both clusters: the identity policy).

    Its target is the forward source, whose topics exist with the data the forward flow copied: nothing is created,
    resized, configured or granted there (the forward flow's `sync` made the target like the source, not the
    other way). Its own internal topics live on the forward source, under its own name, so the forward flow's
    progress, control and reports stay as they were."""
    data = plan.model_dump()
    data.update(
        name=failback_plan_name(plan),
        description=f"the way back of plan '{plan.name}' after its cutover",
        source=data["target"], target=data["source"],
        topics={"include": [re.escape(topic) for topic in sorted(topics)], "exclude": []},
        sync={**data["sync"], "configs": False, "partitions": False, "acls": False, "reuse_existing_topics": True},
        # Where each partition starts is stored before the engine starts (`way_back`): never "earliest".
        engine={**data["engine"], "replicate_heartbeats": False},
        backfill={**data["backfill"], "topics": []},
        cutover={**data["cutover"], "return_flow": None,
                 "producer_topics": [t for t in data["cutover"]["producer_topics"] if t in set(topics)]},
        schedule=None,
    )
    if data["schemas"] is not None:  # records written on the target point into its registry: translated back
        data["schemas"] = {**data["schemas"], "source": data["schemas"]["target"], "target": data["schemas"]["source"]}
    data["validation"] = {**data["validation"], "schedule": None}
    return plan_from_dict(data, f"the way back of plan '{plan.name}'")


def check_failback_possible(plan: MigrationPlan) -> None:
    """Refuse a plan whose way back cannot be exact, before anything is read or changed."""
    if plan.replication_policy.type != "identity":
        raise PlanError(f"plan '{plan.name}'", [
            "replication_policy.type: a way back needs the identity policy (a topic keeps its name on both "
            f"clusters); this plan uses '{plan.replication_policy.type}', whose copies are other topics, read by "
            "other consumers: move groups back with `switch-group --rollback` and producers by hand"])
    if len(failback_plan_name(plan)) > 100:
        raise PlanError(f"plan '{plan.name}'", [
            f"name: the way back is named '{failback_plan_name(plan)}', over 100 characters: shorten the plan's name"])
