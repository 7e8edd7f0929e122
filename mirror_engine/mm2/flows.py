"""Which replication flows of a MirrorMaker 2 file become plans: those it enables (`run` runs them all), or the one
asked for (`--flow a->b`); and the plan's name for each."""

from __future__ import annotations

import re
from typing import Any

from mirror_engine.mm2.settings import KeyInfo


def plan_name(source: str, target: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_\-]", "-", f"{source}-to-{target}")
    name = re.sub(r"^[^A-Za-z0-9]+", "", name)[:100]
    return name or "mm2-flow"


def _flow_switches(keys: dict[str, KeyInfo]) -> list[str]:
    return [key for key, info in keys.items()
            if info.scope == "flow" and info.name == "enabled" and info.role == "used"]


def enabled_flows(keys: dict[str, KeyInfo], values: dict[str, Any]) -> list[str]:
    """The flows the file enables ("a->b"), in the file's order."""
    return [keys[key].owner for key in _flow_switches(keys) if values.get(key)]


def choose_flow(
    flow: str | None, keys: dict[str, KeyInfo], values: dict[str, Any], clusters: list[str], problems: list[str]
) -> tuple[str, str] | None:
    if flow is not None:
        match = re.fullmatch(r"\s*(\S+?)\s*->\s*(\S+?)\s*", flow)
        if match is None:
            problems.append(f"flow: expected '<source>-><target>', e.g. {'->'.join(clusters[:2]) or 'a->b'}, "
                            f"got {flow!r}")
            return None
        source, target = match.groups()
        if not clusters:
            return None  # already reported: clusters is missing
        chosen_ok = True
        for alias in (source, target):
            if alias not in clusters:
                problems.append(f"clusters: the requested flow {flow.strip()} names cluster '{alias}', "
                                f"which is not listed ({', '.join(clusters)})")
                chosen_ok = False
        if chosen_ok and source == target:
            problems.append(f"flow: a flow needs two different clusters, got {flow.strip()}")
            chosen_ok = False
        return (source, target) if chosen_ok else None

    flow_switches = _flow_switches(keys)
    enabled = [key for key in flow_switches if values.get(key)]
    if len(enabled) == 1:
        source, _, target = keys[enabled[0]].owner.partition("->")
        return source, target
    unreadable = [key for key in flow_switches if key not in values]
    if not clusters or unreadable:
        return None  # no clusters, or an enabled value that is not a boolean: already reported
    if not enabled:
        example = "->".join(clusters[:2]) if len(clusters) >= 2 else "a->b"
        problems.append(f"<source>-><target>.enabled: no replication flow is enabled; enable exactly one, "
                        f"e.g. {example}.enabled = true")
    else:
        flows = ", ".join(keys[key].owner for key in enabled)
        problems.append(f"{', '.join(enabled)}: {len(enabled)} replication flows are enabled ({flows}); "
                        f"`run` runs them all, this needs one of them: choose it with --flow {keys[enabled[0]].owner} "
                        f"(flow='{keys[enabled[0]].owner}' from Python)")
    return None
