"""Read a MirrorMaker 2 dedicated-mode properties file (`connect-mirror-maker.properties`) into a MigrationPlan.

One replication flow `a->b` of the file becomes one plan: source alias `a`, target alias `b`, named `a-to-b`; a file
that enables several gives one plan each (`import_mm2_flows`), as MM2's dedicated mode runs them all.
The file is turned into the same dict a YAML plan holds and validated by `plan_from_dict`, so both routes
share every check.

Whatever MM2 4.x runs, this reader accepts: the file is read as `Properties.load` reads it
(`java_properties`), and every key is sorted as MM2 sorts it (`mm2_settings`): used by MM2 (mapped to a
plan field, or accepted as not needed by this engine and listed in the plan's description), ignored by MM2
where it stands, or no Kafka setting at all. The last two become warnings, one line each, never errors.
Errors (`PlanError`, every problem at once, each line starting with the key it concerns) are kept for what
MM2 itself refuses (a value of the wrong type, a class it cannot load, also one named by its simple name, a
malformed JAAS entry), for what the engine would do differently from MM2 (a custom replication policy, filter
or converter, transforms, a renamed source alias, client settings librdkafka cannot take), and for mistakes
MM2 lets pass (a config provider reference it cannot resolve, which it keeps as literal text; a flow naming
a cluster not in `clusters`, which it ignores; no enabled flow, where it only emits heartbeats).
`tests/integration/test_mm2_corpus_vs_mm2.py` checks this against real MM2 for every corpus file. JKS keystores
and JKS or PKCS12 truststores are converted at load to PEM files librdkafka reads (`keystores`: a private
directory removed when the process exits), so a file naming one needs it readable, with its password, there.

Key shapes, as in MM2's `MirrorMakerConfig`:

- top level: `clusters`, connector settings (`topics`, `replication.factor`, ...), REST and config
  provider settings, and client security settings that apply to every cluster (`security.protocol`,
  `sasl.*`, `ssl.*`);
- per cluster, `<a>.<setting>`: `bootstrap.servers`, client security settings (they win over the top-level
  ones), `<a>.consumer.*` / `<a>.producer.*` / `<a>.admin.*` client settings, Connect worker settings;
- per flow, `<a>-><b>.<setting>`: `enabled` and connector settings, which win over the top-level ones.

Defaults of unset MM2 settings are MM2's: DefaultReplicationPolicy, `replication.factor` 2, and the switches
and intervals of the periodic work its dedicated mode runs beside the copy, which `mirror-engine run` runs too
(heartbeats every second; topics, configs, ACLs and groups refreshed every 600 s; checkpoints every 60 s;
`sync.group.offsets.enabled` false, every 60 s when on; see `plan_builder`). Lists that
MM2 replaces wholesale (`topics.exclude`, `groups.exclude`, `config.properties.exclude`) are *added* to
MM2's defaults by the plan, so an entry of the file identical to a default is dropped, and a default the
file leaves out still applies.

Secrets: `${env:NAME}` references in client settings stay references (the plan's `${NAME}`), resolved when
the engine connects; `${file:...}` and `${directory:...}` references are read at load time. No error message
shows a resolved value or a JAAS option value.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mirror_engine.mm2.config_providers import ConfigProviders
from mirror_engine.mm2.flow_set import loop_problems
from mirror_engine.mm2.flows import choose_flow, enabled_flows
from mirror_engine.mm2.plan_builder import PlanBuilder, build_plan_fields, unused_keys
from mirror_engine.mm2.properties import PropertiesError, load_properties, parse_properties_text
from mirror_engine.mm2.settings import KeyInfo
from mirror_engine.mm2.values import read_keys, split_list
from mirror_engine.plan import (
    DEFAULT_GROUP_EXCLUDES,
    DEFAULT_TOPIC_EXCLUDES,
    MigrationPlan,
    NameFilter,
    PlanError,
    plan_from_dict,
)

__all__ = ["Mm2Import", "Mm2PlanError", "import_mm2_properties", "load_mm2_config", "parse_properties",
           "plan_from_mm2_properties", "read_mm2_config"]

_log = logging.getLogger(__name__)


class Mm2PlanError(PlanError):
    """A PlanError that also carries the warnings found before the file was refused."""

    def __init__(self, source: str, problems: list[str], warnings: list[str]) -> None:
        super().__init__(source, list(dict.fromkeys(problems)))
        self.warnings = tuple(warnings)


@dataclass(frozen=True)
class Mm2Import:
    """The plan of one flow of an MM2 file, and the warnings about keys MM2 ignores or does not know."""

    plan: MigrationPlan
    warnings: tuple[str, ...]


def parse_properties(text: str) -> dict[str, str]:
    """The entries of a Java .properties text (see `java_properties`); ValueError if malformed."""
    return parse_properties_text(text)


def _translate(problem: str, origins: dict[str, str]) -> str:
    """`plan.path: message` -> `mm2.key: message (plan field plan.path)` where the plan field came from a key."""
    path, sep, message = problem.partition(": ")
    if not sep:
        return problem
    candidate = path
    while candidate:
        key = origins.get(candidate)
        if key is not None and not key.endswith(".*"):
            return f"{key}: {message} (plan field {path})"
        candidate = candidate.rpartition(".")[0]
    return problem


def _filter_problems(plan: MigrationPlan, origins: dict[str, str]) -> list[str]:
    """Regexes valid one by one but not once MM2 joins them with `|` (e.g. a `(?i)` flag after the first)."""
    problems = []
    for field, selection, defaults in (("topics", plan.topics, DEFAULT_TOPIC_EXCLUDES),
                                       ("groups", plan.groups, DEFAULT_GROUP_EXCLUDES)):
        try:
            NameFilter(selection.include, [*defaults, *selection.exclude])
        except ValueError as error:
            role = "exclude" if "exclude" in str(error) else "include"
            key = origins.get(f"{field}.{role}", field if role == "include" else f"{field}.exclude")
            problems.append(f"{key}: {error}")
    return problems


@dataclass
class _FileKeys:
    """An MM2 file's keys as read, before any flow is chosen."""

    clusters: list[str]
    keys: dict[str, KeyInfo]
    values: dict[str, Any]
    problems: list[str]
    warnings: list[str]


def _file_keys(content: str | bytes, source_name: str, environ: Mapping[str, str]) -> _FileKeys:
    try:
        entries = load_properties(content) if isinstance(content, bytes) else parse_properties_text(content)
    except PropertiesError as error:
        raise PlanError(source_name, [f"(file): {error}"]) from None
    problems: list[str] = []
    warnings: list[str] = []

    clusters: list[str] = []
    if "clusters" in entries:
        clusters = list(dict.fromkeys(split_list(entries["clusters"])))
        if not clusters:
            problems.append("clusters: must list the cluster aliases, e.g. clusters = source, target")
    else:
        problems.append("clusters: required: list the cluster aliases, e.g. clusters = source, target")

    providers, provider_problems = ConfigProviders.from_entries(entries, environ)
    problems.extend(provider_problems)
    keys, values = read_keys(entries, clusters, providers, environ, problems, warnings)
    return _FileKeys(clusters, keys, values, problems, warnings)


def import_mm2_properties(content: str | bytes, source_name: str, flow: str | None = None, *,
                          environ: Mapping[str, str] | None = None) -> Mm2Import:
    """The plan for one replication flow of a MirrorMaker 2 properties file, with its warnings.

    `content` is the file's bytes (read as ISO-8859-1, as MM2 reads them) or its text. `flow` ("a->b")
    chooses the flow; without it the file must enable exactly one (`a->b.enabled = true`). `environ` is what
    `${env:...}` references read (the process environment by default). PlanError lists every problem.
    """
    environ = os.environ if environ is None else environ
    read = _file_keys(content, source_name, environ)
    clusters, keys, values, problems, warnings = read.clusters, read.keys, read.values, read.problems, read.warnings

    chosen = choose_flow(flow, keys, values, clusters, problems)
    if chosen is None:
        raise Mm2PlanError(source_name, problems, warnings)

    source, target = chosen
    builder = PlanBuilder(keys, values, source, target, environ)
    broken = build_plan_fields(builder, problems, warnings)
    unused = unused_keys(keys, builder.flow, source, target)
    description = f"Imported from the MirrorMaker 2 config {source_name}, flow {builder.flow}."
    if unused:
        description += f" Accepted but not used by this engine: {', '.join(unused)}."
    builder.data["description"] = description

    try:
        plan = plan_from_dict(builder.data, source_name)
    except PlanError as error:
        for line in error.problems:
            if line.split(":", 1)[0].split(".", 1)[0] in broken:
                continue  # a consequence of a problem already listed
            problems.append(_translate(line, builder.origins))
        raise Mm2PlanError(source_name, problems, warnings) from None
    problems.extend(_filter_problems(plan, builder.origins))
    if problems:
        raise Mm2PlanError(source_name, problems, warnings)
    return Mm2Import(plan, tuple(warnings))


def import_mm2_flows(content: str | bytes, source_name: str, *,
                     environ: Mapping[str, str] | None = None) -> list[Mm2Import]:
    """A plan for every flow the file enables, as MM2's dedicated mode runs them all (one when it enables one).
    A set of flows that would copy records round a loop is refused (`loop_problems`); PlanError lists every
    problem."""
    environ = os.environ if environ is None else environ
    read = _file_keys(content, source_name, environ)
    flows = enabled_flows(read.keys, read.values)
    if len(flows) < 2:
        return [import_mm2_properties(content, source_name, environ=environ)]
    imports = [import_mm2_properties(content, source_name, flow, environ=environ) for flow in flows]
    problems = loop_problems([imported.plan for imported in imports])
    if problems:
        raise Mm2PlanError(source_name, problems, tuple(dict.fromkeys(w for i in imports for w in i.warnings)))
    return imports


def read_mm2_flows(path: str | Path) -> list[Mm2Import]:
    """Every enabled flow of a MirrorMaker 2 dedicated-mode properties file (`import_mm2_flows`)."""
    path = Path(path)
    try:
        content = path.read_bytes()
    except OSError as error:
        raise PlanError(str(path), [f"(file): cannot read it: {error.strerror}"]) from None
    return import_mm2_flows(content, str(path))


def read_mm2_config(path: str | Path, flow: str | None = None) -> Mm2Import:
    """Read a MirrorMaker 2 dedicated-mode properties file into a plan for one of its flows, with warnings."""
    path = Path(path)
    try:
        content = path.read_bytes()
    except OSError as error:
        raise PlanError(str(path), [f"(file): cannot read it: {error.strerror}"]) from None
    return import_mm2_properties(content, str(path), flow)


def _logged(read: Callable[[], Mm2Import], source_name: str) -> MigrationPlan:
    """The plan `read` returns; its warnings are logged, also when the file is refused (they may say why)."""
    try:
        imported = read()
    except Mm2PlanError as error:
        for warning in error.warnings:
            _log.warning("%s: %s", source_name, warning)
        raise
    for warning in imported.warnings:
        _log.warning("%s: %s", source_name, warning)
    return imported.plan


def plan_from_mm2_properties(text: str | bytes, source_name: str, flow: str | None = None) -> MigrationPlan:
    """The plan for one flow of an MM2 properties text (see `import_mm2_properties`); warnings are logged."""
    return _logged(lambda: import_mm2_properties(text, source_name, flow), source_name)


def load_mm2_config(path: str | Path, flow: str | None = None) -> MigrationPlan:
    """Read a MirrorMaker 2 dedicated-mode properties file into a plan (see the module doc); warnings are logged."""
    return _logged(lambda: read_mm2_config(path, flow), str(path))
