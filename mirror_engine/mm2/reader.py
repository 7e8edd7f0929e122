"""Read a MirrorMaker 2 dedicated-mode properties file (`connect-mirror-maker.properties`) into a MigrationPlan.

One replication flow `a->b` of the file becomes one plan: source alias `a`, target alias `b`, named `a-to-b`.
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
`sync.group.offsets.enabled` false, every 60 s when on; see `_PERIODIC`). Lists that
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
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mirror_engine.mm2.client_settings import client_config
from mirror_engine.mm2.config_providers import ConfigProviderError, ConfigProviders
from mirror_engine.mm2.naming import alias_problems, naming_fields, same_cluster_problem
from mirror_engine.mm2.properties import PropertiesError, load_properties, parse_properties_text
from mirror_engine.mm2.settings import MM2_PACKAGE, SECURITY, KeyInfo, Setting, classify_key
from mirror_engine.plan import (
    DEFAULT_GROUP_EXCLUDES,
    DEFAULT_TOPIC_EXCLUDES,
    MM2_CONFIG_EXCLUDES,
    MigrationPlan,
    NameFilter,
    PlanError,
    plan_from_dict,
)

__all__ = ["Mm2Import", "Mm2PlanError", "import_mm2_properties", "load_mm2_config", "parse_properties",
           "plan_from_mm2_properties", "read_mm2_config"]

_log = logging.getLogger(__name__)
_CONVERTER_PACKAGE = "org.apache.kafka.connect.converters."
# Client settings whose values go into the plan: environment references there stay references.
_PLAN_CLIENT_SETTINGS = frozenset({*SECURITY, "bootstrap.servers", "client.id"})
_UNDECLARED_ENV = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}")


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


# ---------------------------------------------------------------------------------------------------------
# Values


def _split_list(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


_INTEGER = re.compile(r"[+-]?[0-9]+")
_DOUBLE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[dDfF]?")


def _convert(key: str, value: str, spec: Setting, problems: list[str], shown: str | None = None) -> Any:
    """The value parsed as MM2's ConfigDef parses it, or None after adding a problem.

    `shown` replaces the value in messages: a value read from a config provider may be a secret.
    """
    got = shown if shown is not None else repr(value)
    if spec.kind == "bool":
        if value.lower() in ("true", "false"):
            return value.lower() == "true"
        problems.append(f"{key}: must be true or false, got {got}")
    elif spec.kind == "int":
        if not _INTEGER.fullmatch(value):
            problems.append(f"{key}: must be an integer, got {got}")
        elif not spec.low <= int(value) <= spec.high:
            problems.append(f"{key}: must be from {spec.low} to {spec.high}, got {got}")
        else:
            return int(value)
    elif spec.kind == "double":
        if _DOUBLE.fullmatch(value):
            return value
        problems.append(f"{key}: must be a number, got {got}")
    elif spec.kind == "list":
        return _split_list(value)
    elif spec.kind == "choice":
        for choice in spec.choices:
            if value.lower() == choice.lower():
                return choice
        problems.append(f"{key}: must be one of {', '.join(spec.choices)}, got {got}")
    elif spec.kind == "class":
        package = _CONVERTER_PACKAGE if spec.choices == ("ByteArrayConverter",) else MM2_PACKAGE
        for simple in spec.choices:
            if value == package + simple:
                return simple
            if value == simple:  # Java's Class.forName finds no class by its simple name: MM2 fails to start
                problems.append(f"{key}: MM2 cannot load a class by its simple name; write {package + simple}")
                return None
        allowed = " or ".join(package + simple for simple in spec.choices)
        problems.append(f"{key}: class {got} is not supported by this engine, which runs {allowed}")
    else:
        return value
    return None


def _resolve(key: str, name: str, value: str, providers: ConfigProviders, environ: Mapping[str, str],
             problems: list[str], warnings: list[str]) -> str | None:
    """The value with its config provider references resolved (environment ones kept in client settings)."""
    defer = name in _PLAN_CLIENT_SETTINGS
    if "env" not in providers.names and _UNDECLARED_ENV.search(value):
        # MM2 resolves ${env:...} only with an EnvVarConfigProvider declared as `env`; earlier versions of this
        # reader took it without one, so it is still read, with a warning.
        warnings.append(f"{key}: MM2 resolves ${{env:...}} only with config.providers = env and "
                        "config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider; "
                        "the engine reads the environment variable itself")

        def environment(match: re.Match[str]) -> str:
            if defer:
                return "${" + match.group(1) + "}"
            if match.group(1) not in environ:
                raise ConfigProviderError(f"{key}: reference {match.group(0)}: environment variable "
                                          f"{match.group(1)} is not set")
            return environ[match.group(1)]

        try:
            value = _UNDECLARED_ENV.sub(environment, value)
        except ConfigProviderError as error:
            problems.append(str(error))
            return None
    try:
        return providers.resolve(key, value, defer_env=defer)
    except ConfigProviderError as error:
        problems.append(str(error))
        return None


# ---------------------------------------------------------------------------------------------------------
# The plan


def _plan_name(source: str, target: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_\-]", "-", f"{source}-to-{target}")
    name = re.sub(r"^[^A-Za-z0-9]+", "", name)[:100]
    return name or "mm2-flow"


def _choose_flow(
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

    flow_switches = [key for key, info in keys.items()
                     if info.scope == "flow" and info.name == "enabled" and info.role == "used"]
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
                        f"the engine runs one flow per process: choose it with --flow {keys[enabled[0]].owner} "
                        f"(flow='{keys[enabled[0]].owner}' from Python) and start one process per flow")
    return None


class _Builder:
    """Collects the plan dict and, for each plan field, the MM2 key it came from."""

    def __init__(self, keys: dict[str, KeyInfo], values: dict[str, Any], source: str, target: str,
                 environ: Mapping[str, str]) -> None:
        self.keys = keys
        self.values = values
        self.source = source
        self.target = target
        self.environ = environ
        self.flow = f"{source}->{target}"
        self.data: dict[str, Any] = {}
        self.origins: dict[str, str] = {}  # plan field path -> MM2 key

    def lookup(self, *names: str) -> tuple[str, Any] | None:
        """The first set value among `names`, each tried flow-scoped then top level; flow-scoped wins."""
        for scope in (f"{self.flow}.", ""):
            for name in names:
                key = scope + name
                if key in self.values:
                    return key, self.values[key]
        return None

    def put(self, path: str, value: Any, key: str) -> None:
        node = self.data
        *parents, last = path.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
        self.origins[path] = key

    def map(self, path: str, *names: str, convert: Callable[[Any], Any] | None = None) -> None:
        found = self.lookup(*names)
        if found is not None:
            key, value = found
            self.put(path, convert(value) if convert else value, key)


def _cluster_settings(alias: str, keys: dict[str, KeyInfo], values: dict[str, Any]) -> dict[str, tuple[str, Any]]:
    """Client settings of one cluster: `<alias>.<name>` over top-level `<name>` (MirrorMakerConfig.clusterProps)."""
    settings: dict[str, tuple[str, Any]] = {}
    for scope, owner in (("top", ""), ("cluster", alias)):
        for key, info in keys.items():
            relevant = info.name in _PLAN_CLIENT_SETTINGS and not (scope == "top" and info.name == "client.id")
            if relevant and info.scope == scope and info.owner == owner and key in values:
                settings[info.name] = (key, values[key])
    return settings


def _cluster_fields(builder: _Builder, problems: list[str], broken: set[str]) -> None:
    for problem in alias_problems(builder.source, builder.target):
        problems.append(problem)
        broken.update(("source", "target"))
    for side, alias in (("source", builder.source), ("target", builder.target)):
        settings = _cluster_settings(alias, builder.keys, builder.values)
        builder.put(f"{side}.alias", alias, "clusters")
        bootstrap = settings.get("bootstrap.servers")
        if bootstrap is None or not bootstrap[1]:
            key = f"{alias}.bootstrap.servers"
            if key not in builder.keys:
                problems.append(f"{key}: required: the {side} cluster '{alias}' of flow {builder.flow} needs "
                                "its bootstrap servers")
            else:
                problems.append(f"{key}: must not be empty")
            broken.add(side)
        else:
            builder.put(f"{side}.bootstrap_servers", ",".join(bootstrap[1]), bootstrap[0])
        client = client_config(alias, settings, problems, builder.environ)
        if client:
            builder.put(f"{side}.client", client, f"{alias}.*")
    servers = [builder.data.get(side, {}).get("bootstrap_servers") for side in ("source", "target")]
    if servers[0] and servers[0] == servers[1]:
        problems.append(same_cluster_problem(builder.origins["source.bootstrap_servers"],
                                             builder.origins["target.bootstrap_servers"], servers[0]))
        broken.add("(plan)")


# The periodic work of MM2's dedicated mode, each with its switch and interval and MM2's defaults
# (MirrorSourceConfig, MirrorCheckpointConfig, MirrorHeartbeatConfig): (switch, its plan field, its default),
# then (interval, its plan field, MM2's default in seconds). A switched-off task's interval is not read.
_PERIODIC: tuple[tuple[tuple[str, str, bool] | None, tuple[str, str, int]], ...] = (
    (("emit.heartbeats.enabled", "engine.emit_heartbeats", True),
     ("emit.heartbeats.interval.seconds", "engine.heartbeat_interval_s", 1)),
    (None, ("refresh.topics.interval.seconds", "engine.refresh_interval_s", 600)),
    (("sync.topic.configs.enabled", "sync.configs", True),
     ("sync.topic.configs.interval.seconds", "sync.configs_interval_s", 600)),
    (("sync.topic.acls.enabled", "sync.acls", True),
     ("sync.topic.acls.interval.seconds", "sync.acls_interval_s", 600)),
    (("emit.checkpoints.enabled", "cutover.emit_checkpoints", True),
     ("emit.checkpoints.interval.seconds", "cutover.checkpoint_interval_s", 60)),
    (("sync.group.offsets.enabled", "cutover.sync_group_offsets", False),
     ("sync.group.offsets.interval.seconds", "cutover.sync_group_offsets_interval_s", 60)),
    (("refresh.groups.enabled", "cutover.refresh_groups", True),
     ("refresh.groups.interval.seconds", "cutover.refresh_groups_interval_s", 600)),
)
# The engine's longest refresh interval: what `refresh.topics.enabled = false` becomes.
_LONGEST_REFRESH_S = 86_400


def _periodic_fields(builder: _Builder, warnings: list[str]) -> None:
    """What `run` does beside the copy, as MM2's dedicated mode: heartbeats, topic refresh, config and ACL sync,
    checkpoints, group offset sync and group refresh, each with MM2's switch and interval, MM2's defaults where
    the file is silent. The checkpoint loop runs when checkpoints or group offset sync are on (as MM2 runs its
    checkpoint connector)."""
    enabled: dict[str, bool] = {}
    for switch, (interval_key, interval_field, default_s) in _PERIODIC:
        if switch is not None:
            key, path, default = switch
            found = builder.lookup(key)
            enabled[key] = found[1] if found else default
            builder.put(path, enabled[key], found[0] if found else key)
            if not enabled[key]:
                continue
        found = builder.lookup(interval_key)
        builder.put(interval_field, found[1] if found else default_s, found[0] if found else interval_key)
    refresh = builder.lookup("refresh.topics.enabled")
    if refresh is not None and not refresh[1]:
        builder.put("engine.refresh_interval_s", _LONGEST_REFRESH_S, refresh[0])
        warnings.append(f"{refresh[0]}: false: MM2 never looks for new topics or partitions after it starts; the "
                        f"engine looks once a day ({_LONGEST_REFRESH_S} s, its longest refresh interval)")
    checkpoints = enabled["emit.checkpoints.enabled"] or enabled["sync.group.offsets.enabled"]
    builder.put("engine.run_checkpoints", checkpoints, "emit.checkpoints.enabled")


def _record_fields(builder: _Builder, problems: list[str]) -> None:
    """What MM2 would do to each record that the engine does not (converters are checked by type)."""
    transforms = builder.lookup("transforms")
    if transforms is not None and transforms[1]:
        problems.append(f"{transforms[0]}: MM2 would apply the transforms {', '.join(transforms[1])} to every "
                        "record; the engine copies records unchanged, so remove them or keep running MM2")


def _build(builder: _Builder, problems: list[str], warnings: list[str]) -> set[str]:
    """Fill the builder's plan dict; return the plan paths left out because of a problem already reported."""
    values = builder.values
    broken: set[str] = set()
    builder.put("name", _plan_name(builder.source, builder.target), f"{builder.flow}.enabled")
    _cluster_fields(builder, problems, broken)

    builder.map("topics.include", "topics")
    builder.map("topics.exclude", "topics.exclude", "topics.blacklist",
                convert=lambda items: [p for p in items if p not in DEFAULT_TOPIC_EXCLUDES])
    builder.map("groups.include", "groups")
    builder.map("groups.exclude", "groups.exclude", "groups.blacklist",
                convert=lambda items: [p for p in items if p not in DEFAULT_GROUP_EXCLUDES])

    naming_fields(builder, problems, warnings)
    _record_fields(builder, problems)

    builder.map("sync.config_exclude", "config.properties.exclude", "config.properties.blacklist",
                convert=lambda items: [p for p in items if p not in MM2_CONFIG_EXCLUDES])
    factor = builder.lookup("replication.factor")
    builder.put("sync.replication_factor", factor[1] if factor else 2, factor[0] if factor else "replication.factor")

    copied = builder.lookup("heartbeats.replication.enabled")  # MM2 copies heartbeats topics by default
    builder.put("engine.replicate_heartbeats", copied[1] if copied else True,
                copied[0] if copied else "heartbeats.replication.enabled")
    _periodic_fields(builder, warnings)

    # Exactly-once: the target worker's exactly.once.source.support=enabled, or the connector's required.
    # The target's own setting wins over a top-level one (MM2 itself reads only the cluster-scoped key).
    worker_keys = (f"{builder.target}.exactly.once.source.support", "exactly.once.source.support")
    found = [(key, values[key]) for key in worker_keys if key in values]
    if (connector := builder.lookup("exactly.once.support")) is not None:
        found.append(connector)
    if found:
        key, setting = next(((k, v) for k, v in found if v in ("enabled", "required")), found[0])
        builder.put("engine.exactly_once", setting in ("enabled", "required"), key)
    return broken


def _unused_keys(keys: dict[str, KeyInfo], flow: str, source: str, target: str) -> list[str]:
    """Keys MM2 uses for this flow that the plan does not need."""
    unused = []
    for key, info in keys.items():
        applies = (info.scope == "top" or (info.scope == "flow" and info.owner == flow)
                   or (info.scope == "cluster" and info.owner in (source, target)))
        mapped = info.spec is not None and info.spec.mapped
        if applies and info.role == "used" and not mapped and key != "clusters":
            unused.append(key)
    return unused


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


def _read_keys(entries: dict[str, str], clusters: list[str], providers: ConfigProviders,
               environ: Mapping[str, str], problems: list[str],
               warnings: list[str]) -> tuple[dict[str, KeyInfo], dict[str, Any]]:
    """Every key's role and, for keys MM2 uses, its resolved and parsed value."""
    keys: dict[str, KeyInfo] = {}
    values: dict[str, Any] = {}
    for key, raw in entries.items():
        info = classify_key(key, clusters)
        if isinstance(info, str):
            problems.append(info)
            continue
        keys[key] = info
        if info.role != "used":
            warnings.append(f"{key}: {info.note}")
        if info.spec is None:
            continue
        value: str | None = raw.strip()  # MM2's ConfigDef trims every value it parses
        shown = None
        if info.role == "used" and "${" in raw:
            value = _resolve(key, info.name, raw, providers, environ, problems, warnings)
            value = None if value is None else value.strip()
            shown = f"the value {raw.strip()!r} resolves to"
        if value is None:
            continue
        converted = _convert(key, value, info.spec, problems, shown)
        if converted is not None and info.role == "used":
            values[key] = converted
    return keys, values


def import_mm2_properties(content: str | bytes, source_name: str, flow: str | None = None, *,
                          environ: Mapping[str, str] | None = None) -> Mm2Import:
    """The plan for one replication flow of a MirrorMaker 2 properties file, with its warnings.

    `content` is the file's bytes (read as ISO-8859-1, as MM2 reads them) or its text. `flow` ("a->b")
    chooses the flow; without it the file must enable exactly one (`a->b.enabled = true`). `environ` is what
    `${env:...}` references read (the process environment by default). PlanError lists every problem.
    """
    environ = os.environ if environ is None else environ
    try:
        entries = load_properties(content) if isinstance(content, bytes) else parse_properties_text(content)
    except PropertiesError as error:
        raise PlanError(source_name, [f"(file): {error}"]) from None
    problems: list[str] = []
    warnings: list[str] = []

    clusters: list[str] = []
    if "clusters" in entries:
        clusters = list(dict.fromkeys(_split_list(entries["clusters"])))
        if not clusters:
            problems.append("clusters: must list the cluster aliases, e.g. clusters = source, target")
    else:
        problems.append("clusters: required: list the cluster aliases, e.g. clusters = source, target")

    providers, provider_problems = ConfigProviders.from_entries(entries, environ)
    problems.extend(provider_problems)
    keys, values = _read_keys(entries, clusters, providers, environ, problems, warnings)

    chosen = _choose_flow(flow, keys, values, clusters, problems)
    if chosen is None:
        raise Mm2PlanError(source_name, problems, warnings)

    source, target = chosen
    builder = _Builder(keys, values, source, target, environ)
    broken = _build(builder, problems, warnings)
    unused = _unused_keys(keys, builder.flow, source, target)
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
