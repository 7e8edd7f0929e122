"""How an MM2 file names things: its replication policy keys and cluster aliases, read into the plan's
`replication_policy` and checked where the engine would name anything differently from MM2.

MM2 names a remote topic `<source.cluster.alias><replication.policy.separator><topic>`
(DefaultReplicationPolicy), or keeps its name (IdentityReplicationPolicy, Kafka 3.0 and later). Before the
identity policy existed, files kept topic names with `source.cluster.alias` and `replication.policy.separator`
both empty (`"" + "" + topic`), often with an empty `target.cluster.alias` too; MM2 4.x still runs them. The
engine reads that idiom as the identity policy, and says in one warning how its internal topic names differ.

Every problem and warning starts with the MM2 keys it concerns and says what to do; none is a validation
message of the plan model.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Protocol

from mirror_engine.plan import ALIAS_PATTERN


class PlanBuilder(Protocol):
    """What the naming fields need of the plan being built from an MM2 file (`plan_builder.PlanBuilder`)."""

    source: str
    target: str
    flow: str

    def lookup(self, *names: str) -> tuple[str, Any] | None: ...

    def put(self, path: str, value: Any, key: str) -> None: ...

    def map(self, path: str, *names: str, convert: Callable[[Any], Any] | None = None) -> None: ...


__all__ = ["alias_problems", "naming_fields", "same_cluster_problem"]

_IDENTITY_CLASS = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
_SEPARATOR = re.compile(r"[A-Za-z0-9._\-]{1,4}")
_ALIAS_MAX = 64


def alias_problems(source: str, target: str) -> list[str]:
    """The flow's aliases the engine cannot take (they name its plan and internal topics), each a sentence."""
    problems = []
    for alias in dict.fromkeys((source, target)):
        if not re.fullmatch(ALIAS_PATTERN, alias) or len(alias) > _ALIAS_MAX:
            problems.append(f"clusters: alias {alias!r} of flow {source}->{target}: the engine names its internal "
                            f"topics after the flow's aliases, so it takes only ASCII letters, digits, '_' and '-', "
                            f"starting with a letter or digit, at most {_ALIAS_MAX} characters; rename the cluster "
                            f"in clusters and in its keys (e.g. {_suggested_alias(alias)})")
    return problems


def _suggested_alias(alias: str) -> str:
    cleaned = re.sub(r"^[^A-Za-z0-9]+", "", re.sub(r"[^A-Za-z0-9_\-]", "-", alias))[:_ALIAS_MAX]
    return cleaned or "dc1"


def same_cluster_problem(source_key: str, target_key: str, servers: str) -> str:
    return (f"{source_key}, {target_key}: both name the same cluster ({servers}): the flow would copy records onto "
            "themselves; point each cluster at its own bootstrap servers")


def _identity_idiom_warning(builder: PlanBuilder, keys: list[str], empty_target: bool) -> str:
    source, target = builder.source, builder.target
    syncs = "mm2-offset-syncsinternal" if empty_target else f"mm2-offset-syncs{target}internal"
    return (f"{', '.join(keys)}: empty: topic names are kept, read as IdentityReplicationPolicy (how files kept "
            "names before it existed); MM2 with these empty values would name its internal topics without "
            f"separators (checkpointsinternal, {syncs}), copy a source heartbeats topic into the target's own "
            "heartbeats and write empty aliases in heartbeats and checkpoints; the engine names them as "
            f"IdentityReplicationPolicy does ({source}.checkpoints.internal, mm2-offset-syncs.{source}.internal, "
            f"{source}.heartbeats) and writes the aliases {source} and {target}. Nothing to do unless a tool reads "
            f"MM2's internal topics by name; replication.policy.class = {_IDENTITY_CLASS} says the same without "
            "this warning")


def naming_fields(builder: PlanBuilder, problems: list[str], warnings: list[str]) -> None:
    """The replication policy, with MM2's `source.cluster.alias` / `target.cluster.alias` overrides."""
    policy = builder.lookup("replication.policy.class")
    kind = "identity" if policy and policy[1] == "IdentityReplicationPolicy" else "default"
    separator = builder.lookup("replication.policy.separator")
    source_alias = builder.lookup("source.cluster.alias")
    target_alias = builder.lookup("target.cluster.alias")
    empty_separator = separator is not None and separator[1] == ""
    idiom = empty_separator and source_alias is not None and source_alias[1] == ""
    empty_target = target_alias is not None and target_alias[1] == ""
    if idiom:
        # `"" + "" + topic` is the topic itself: the way to keep topic names before IdentityReplicationPolicy.
        kind = "identity"
        found: list[tuple[str, Any] | None] = [source_alias, target_alias if empty_target else None, separator]
        warnings.append(_identity_idiom_warning(builder, [item[0] for item in found if item], empty_target))
    elif kind == "identity" and empty_separator:
        assert separator is not None
        warnings.append(f"{separator[0]}: empty: with IdentityReplicationPolicy topic names are kept either way; "
                        "MM2 would name its internal topics without separators "
                        f"({builder.source}checkpointsinternal), the engine names them with '.' "
                        f"({builder.source}.checkpoints.internal); nothing to do unless a tool reads MM2's internal "
                        "topics by name (remove the line to silence this)")
    elif empty_separator:
        assert separator is not None
        alias = source_alias[1] if source_alias is not None else builder.source
        problems.append(f"{separator[0]}: empty: MM2 would name remote topics '{alias}<topic>' (e.g. '{alias}orders'), "
                        "which the engine does not; set it to a separator such as '.' (MM2's default), or keep topic "
                        f"names with replication.policy.class = {_IDENTITY_CLASS}")
    elif separator is not None and not _SEPARATOR.fullmatch(separator[1]):
        problems.append(f"{separator[0]}: {separator[1]!r}: the engine takes 1 to 4 ASCII letters, digits, '.', '_' "
                        "or '-' (Kafka's topic name characters); set it to one such as '.' (MM2's default) or '_'")
    if source_alias is not None and source_alias[1] != builder.source and not idiom and kind == "default":
        problems.append(f"{source_alias[0]}: MM2 would name remote topics "
                        f"'{source_alias[1]}{separator[1] if separator else '.'}<topic>'; the engine names them "
                        f"after the flow's source cluster '{builder.source}'; remove it or set it to "
                        f"{builder.source} (an empty alias with an empty replication.policy.separator keeps "
                        "topic names)")
    if target_alias is not None and target_alias[1] != builder.target and not (idiom and empty_target):
        problems.append(f"{target_alias[0]}: MM2 would treat '{target_alias[1]}' as the target cluster of flow "
                        f"{builder.flow} (cycle detection, internal topic names); the engine uses "
                        f"'{builder.target}'; remove it or set it to {builder.target}")
    builder.put("replication_policy.type", kind, policy[0] if policy else "replication.policy.class")
    if separator is not None and not empty_separator and _SEPARATOR.fullmatch(separator[1]):
        builder.put("replication_policy.separator", separator[1], separator[0])
    builder.map("replication_policy.internal_separator_enabled", "replication.policy.internal.topic.separator.enabled")
