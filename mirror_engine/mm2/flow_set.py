"""The enabled flows of one MirrorMaker 2 file taken together, as its dedicated mode runs them: active/active pairs
(`a->b` and `b->a`), hubs (several clusters into one), chains; and the replication loops such a set could make.

Under the default policy a loop cannot happen: a remote topic names its source cluster (`a.orders`), and no flow
copies a topic back to a cluster it came from (`is_cycle`, MM2's rule). Under the identity policy a copied topic keeps
its name, so a flow cannot tell it from a topic of its own source: records would go round the loop for ever, and
MM2 cannot detect that either. A set of flows with such a loop is refused before anything starts, unless one flow
of the loop passes nothing on: it copies only topics it lists by name, and the next flow takes none of the names it
writes.
"""

from __future__ import annotations

import re

from mirror_engine.plan import MigrationPlan

__all__ = ["loop_problems"]

# An include pattern that matches one name only (no regex meaning in any of its characters).
_LITERAL = re.compile(r"[A-Za-z0-9_\-]+")


def loop_problems(plans: list[MigrationPlan]) -> list[str]:
    """One sentence for each loop of flows that would copy records round for ever."""
    problems = []
    for loop in _simple_loops(plans):
        identity = [plan for plan in loop if plan.replication_policy.type == "identity"]
        if not identity:
            continue  # prefixed remote topics are never copied back (MigrationPlan.replicates_topic)
        if any(_passes_nothing(first, second) for first, second in zip(loop, [*loop[1:], loop[0]], strict=True)):
            continue
        path = "->".join([plan.source.alias for plan in loop] + [loop[0].source.alias])
        problems.append(
            f"{', '.join(f'{plan.source.alias}->{plan.target.alias}.enabled' for plan in loop)}: these flows make "
            f"a loop ({path}) and {', '.join(f'{p.source.alias}->{p.target.alias}' for p in identity)} "
            f"{'uses' if len(identity) == 1 else 'use'} the identity replication policy, which keeps topic names: "
            "a record copied along the loop would come back to its cluster as a topic of its own and be copied "
            "again, for ever (MirrorMaker 2 cannot detect this loop either). Use the default policy "
            "(replication.policy.class = org.apache.kafka.connect.mirror.DefaultReplicationPolicy) on every flow "
            "of the loop, or list one flow's topics by name with none of them taken by the next flow, or run one "
            "flow alone with --flow")
    return problems


def _passes_nothing(first: MigrationPlan, second: MigrationPlan) -> bool:
    """No record `first` copies is copied on by `second`: `first` copies only topics it names, and `second` takes
    none of the names they have on its source."""
    names = first.topics.include
    if not names or not all(_LITERAL.fullmatch(name) for name in names):
        return False
    policy = first.policy()
    written = [policy.format_remote_topic(first.source.alias, name) for name in names if first.replicates_topic(name)]
    return not any(second.replicates_topic(name) for name in written)


def _simple_loops(plans: list[MigrationPlan]) -> list[list[MigrationPlan]]:
    """Every cycle of flows (each flow's target the next one's source) that visits a cluster once, found once: from
    its flow listed first."""
    loops: list[list[MigrationPlan]] = []

    def extend(path: list[int]) -> None:
        here, home = plans[path[-1]].target.alias, plans[path[0]].source.alias
        visited = {plans[i].source.alias for i in path}
        for index, plan in enumerate(plans):
            if index <= path[0] or plan.source.alias != here:
                continue
            if plan.target.alias == home:
                loops.append([plans[i] for i in [*path, index]])
            elif plan.target.alias not in visited:
                extend([*path, index])

    for start in range(len(plans)):
        extend([start])
    return loops
