"""Read a MirrorMaker 2 dedicated-mode properties file (`connect-mirror-maker.properties`) into a MigrationPlan.

One replication flow `a->b` of the file becomes one plan: source alias `a`, target alias `b`, named `a-to-b`.
The file is turned into the same dict a YAML plan holds and validated by `plan_from_dict`, so both routes
share every check. A bad file fails with `PlanError`, listing every problem at once, each line starting
with the MirrorMaker 2 key it concerns.

Key shapes, as in MM2's `MirrorMakerConfig`:

- top level: `clusters`, connector settings (`topics`, `replication.factor`, ...), worker settings, and
  client security settings that apply to every cluster (`security.protocol`, `sasl.*`, `ssl.*`);
- per cluster, `<a>.<setting>`: `bootstrap.servers`, client security settings (they win over the top-level
  ones), `<a>.consumer.*` / `<a>.producer.*` / `<a>.admin.*` client settings, worker settings;
- per flow, `<a>-><b>.<setting>`: `enabled` and connector settings, which win over the top-level ones.

Every key is either mapped to a plan field, accepted as not needed by this engine (listed in the plan's
description), or reported as unknown. Defaults of unset MM2 settings: where MM2's default decides what ends
up on the target and the plan can express it, MM2's default is used (DefaultReplicationPolicy,
`replication.factor` 2, `sync.group.offsets.enabled` false); timing settings left unset keep the engine's
own defaults. Lists that MM2 replaces wholesale (`topics.exclude`, `groups.exclude`,
`config.properties.exclude`) are *added* to MM2's defaults by the plan, so an entry of the file identical
to a default is dropped, and a default the file leaves out still applies.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from mirror_engine.filters import DEFAULT_GROUP_EXCLUDES, DEFAULT_TOPIC_EXCLUDES, NameFilter
from mirror_engine.plan import MM2_CONFIG_EXCLUDES, MigrationPlan, PlanError, plan_from_dict

__all__ = ["RECOGNISED_SETTINGS", "load_mm2_config", "parse_properties", "plan_from_mm2_properties"]

_MM2_PACKAGE = "org.apache.kafka.connect.mirror."


@dataclass(frozen=True)
class _Setting:
    """How one MM2 setting is checked, and whether the plan uses it (`mapped`) or only accepts it."""

    kind: Literal["bool", "int", "list", "text", "choice", "class"]
    mapped: bool = False
    # "choice": allowed values (matched case-insensitively); "class": allowed simple class names.
    choices: tuple[str, ...] = ()
    low: int = -(2**31)
    high: int = 2**31 - 1


_BOOL = _Setting("bool")
_INT = _Setting("int")
_LONG = _Setting("int", low=-(2**63), high=2**63 - 1)
_SHORT_FACTOR = _Setting("int", low=-1, high=32767)
_TEXT = _Setting("text")

# Connector settings (MirrorSourceConfig, MirrorCheckpointConfig, MirrorHeartbeatConfig, MirrorConnectorConfig,
# Connect's ConnectorConfig): top level, or flow-scoped `<a>-><b>.<setting>`.
_CONNECTOR: dict[str, _Setting] = {
    "topics": _Setting("list", mapped=True),
    "topics.exclude": _Setting("list", mapped=True),
    "topics.blacklist": _Setting("list", mapped=True),
    "groups": _Setting("list", mapped=True),
    "groups.exclude": _Setting("list", mapped=True),
    "groups.blacklist": _Setting("list", mapped=True),
    "config.properties.exclude": _Setting("list", mapped=True),
    "config.properties.blacklist": _Setting("list", mapped=True),
    "replication.policy.class": _Setting(
        "class", mapped=True, choices=("DefaultReplicationPolicy", "IdentityReplicationPolicy")
    ),
    "replication.policy.separator": _Setting("text", mapped=True),
    "replication.policy.internal.topic.separator.enabled": _Setting("bool", mapped=True),
    "replication.factor": _Setting("int", mapped=True),
    "sync.topic.configs.enabled": _Setting("bool", mapped=True),
    "sync.topic.acls.enabled": _Setting("bool", mapped=True),
    "sync.group.offsets.enabled": _Setting("bool", mapped=True),
    "emit.heartbeats.interval.seconds": _Setting("int", mapped=True, low=-(2**63), high=2**63 - 1),
    "emit.checkpoints.interval.seconds": _Setting("int", mapped=True, low=-(2**63), high=2**63 - 1),
    "sync.group.offsets.interval.seconds": _Setting("int", mapped=True, low=-(2**63), high=2**63 - 1),
    "refresh.topics.interval.seconds": _Setting("int", mapped=True, low=-(2**63), high=2**63 - 1),
    "exactly.once.support": _Setting("choice", mapped=True, choices=("requested", "required")),
    # Accepted, not needed by this engine.
    "tasks.max": _Setting("int", low=1),
    "offset-syncs.topic.location": _Setting("choice", choices=("source", "target")),
    "offset.lag.max": _LONG,
    "emit.offset-syncs.enabled": _BOOL,
    "offset-syncs.topic.replication.factor": _SHORT_FACTOR,
    "checkpoints.topic.replication.factor": _SHORT_FACTOR,
    "heartbeats.topic.replication.factor": _SHORT_FACTOR,
    "refresh.topics.enabled": _BOOL,
    "refresh.groups.enabled": _BOOL,
    "refresh.groups.interval.seconds": _LONG,
    "sync.topic.configs.interval.seconds": _LONG,
    "sync.topic.acls.interval.seconds": _LONG,
    "emit.heartbeats.enabled": _BOOL,
    "emit.checkpoints.enabled": _BOOL,
    "heartbeats.replication.enabled": _BOOL,
    "consumer.poll.timeout.ms": _LONG,
    "admin.timeout.ms": _LONG,
    # Only MM2's own filters: their behaviour is what the plan implements.
    "topic.filter.class": _Setting("class", choices=("DefaultTopicFilter",)),
    "group.filter.class": _Setting("class", choices=("DefaultGroupFilter",)),
    "config.property.filter.class": _Setting("class", choices=("DefaultConfigPropertyFilter",)),
}

# Client security settings: per cluster (`<a>.ssl.keystore.location`), or top level for every cluster.
_SECURITY: dict[str, _Setting] = {
    "security.protocol": _Setting("choice", mapped=True, choices=("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")),
    "sasl.mechanism": _Setting("text", mapped=True),
    "sasl.jaas.config": _Setting("text", mapped=True),
    "sasl.kerberos.service.name": _Setting("text", mapped=True),
    "ssl.keystore.type": _Setting("choice", mapped=True, choices=("JKS", "PKCS12", "PEM")),
    "ssl.keystore.location": _Setting("text", mapped=True),
    "ssl.keystore.password": _Setting("text", mapped=True),
    "ssl.key.password": _Setting("text", mapped=True),
    "ssl.keystore.key": _Setting("text", mapped=True),
    "ssl.keystore.certificate.chain": _Setting("text", mapped=True),
    "ssl.truststore.type": _Setting("choice", mapped=True, choices=("JKS", "PKCS12", "PEM")),
    "ssl.truststore.location": _Setting("text", mapped=True),
    "ssl.truststore.certificates": _Setting("text", mapped=True),
    "ssl.endpoint.identification.algorithm": _Setting("text", mapped=True),
    # JVM TLS/SASL tuning with no librdkafka counterpart.
    "ssl.truststore.password": _TEXT,
    "ssl.protocol": _TEXT,
    "ssl.enabled.protocols": _TEXT,
    "ssl.provider": _TEXT,
    "ssl.cipher.suites": _TEXT,
    "ssl.keymanager.algorithm": _TEXT,
    "ssl.trustmanager.algorithm": _TEXT,
    "ssl.secure.random.implementation": _TEXT,
    "ssl.engine.factory.class": _TEXT,
    "sasl.client.callback.handler.class": _TEXT,
}
_SECURITY_PREFIXES = ("sasl.login.", "sasl.kerberos.", "sasl.oauthbearer.")

_EXACTLY_ONCE_SOURCE = _Setting("choice", mapped=True, choices=("disabled", "enabled", "preparing"))

# Per cluster only.
_CLUSTER: dict[str, _Setting] = {
    "bootstrap.servers": _Setting("text", mapped=True),
    "client.id": _Setting("text", mapped=True),
    "exactly.once.source.support": _EXACTLY_ONCE_SOURCE,
}

# Top level only (MirrorMakerConfig and the Connect worker of each herder).
_TOP: dict[str, _Setting] = {
    "clusters": _Setting("list", mapped=True),
    "dedicated.mode.enable.internal.rest": _BOOL,
    "plugin.discovery": _Setting("choice", choices=("only_scan", "hybrid_warn", "hybrid_fail", "service_load")),
    "plugin.path": _TEXT,
    "config.providers": _Setting("list"),
    "exactly.once.source.support": _EXACTLY_ONCE_SOURCE,
}

# Prefixed client settings: MM2 passes them to its Java clients; recognised, not needed here.
_CLIENT_PREFIXES = ("consumer.", "producer.", "admin.")
# Connect worker internal topics (mm2-offsets/configs/status.<a>.internal): not used by this engine.
_WORKER_PREFIXES = ("offset.storage.", "config.storage.", "status.storage.")
_ISOLATION_LEVEL = _Setting("choice", choices=("read_committed", "read_uncommitted"))

RECOGNISED_SETTINGS: dict[str, tuple[str, ...]] = {
    "top level": (*_TOP, *_CONNECTOR, *_SECURITY, *(f"{p}*" for p in (*_SECURITY_PREFIXES, *_CLIENT_PREFIXES,
                                                                       *_WORKER_PREFIXES, "config.providers."))),
    "<a>.": (*_CLUSTER, *_SECURITY, *(f"{p}*" for p in (*_SECURITY_PREFIXES, *_CLIENT_PREFIXES, *_WORKER_PREFIXES))),
    "<a>-><b>.": ("enabled", *_CONNECTOR, *(f"{p}*" for p in _CLIENT_PREFIXES)),
}
"""Settings this reader knows, by scope; `*` ends a prefix."""


def _prefixed(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name.startswith(prefix) and len(name) > len(prefix) for prefix in prefixes)


def _client_spec(name: str) -> _Setting | None:
    if name == "consumer.isolation.level":
        return _ISOLATION_LEVEL
    return _TEXT if _prefixed(name, _CLIENT_PREFIXES) else None


def _top_spec(name: str) -> _Setting | None:
    spec = _TOP.get(name) or _CONNECTOR.get(name) or _SECURITY.get(name)
    if spec:
        return spec
    if _prefixed(name, (*_SECURITY_PREFIXES, *_WORKER_PREFIXES, "config.providers.")):
        return _TEXT
    return _client_spec(name)


def _cluster_spec(name: str) -> _Setting | None:
    spec = _CLUSTER.get(name) or _SECURITY.get(name)
    if spec:
        return spec
    if _prefixed(name, (*_SECURITY_PREFIXES, *_WORKER_PREFIXES)):
        return _TEXT
    return _client_spec(name)


def _flow_spec(name: str) -> _Setting | None:
    if name == "enabled":
        return _Setting("bool", mapped=True)
    return _CONNECTOR.get(name) or _client_spec(name)


# ---------------------------------------------------------------------------------------------------------
# Java .properties syntax (the subset MM2 files use; `java.util.Properties.load` rules)

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_WHITESPACE = " \t\f"
_SIMPLE_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _continues(line: str) -> bool:
    """True if the line ends with an odd number of backslashes (the last one escapes the line break)."""
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1


def _unescape(raw: str, problems: list[str], where: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(raw):
        char = raw[i]
        if char != "\\":
            out.append(char)
            i += 1
            continue
        if i + 1 == len(raw):  # a lone backslash at the very end of the file
            break
        escaped = raw[i + 1]
        if escaped == "u":
            digits = raw[i + 2 : i + 6]
            if len(digits) == 4 and all(c in "0123456789abcdefABCDEF" for c in digits):
                out.append(chr(int(digits, 16)))
                i += 6
                continue
            problems.append(f"{where}: malformed \\uXXXX escape {raw[i : i + 6]!r}")
            i += 2
            continue
        out.append(_SIMPLE_ESCAPES.get(escaped, escaped))
        i += 2
    return "".join(out)


def _split_entry(line: str) -> tuple[str, str]:
    """Split a logical line into raw (still escaped) key and value."""
    i = 0
    while i < len(line):
        char = line[i]
        if char == "\\":
            i += 2
            continue
        if char in "=:" or char in _WHITESPACE:
            break
        i += 1
    key = line[:i]
    rest = line[i:].lstrip(_WHITESPACE)
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(_WHITESPACE)
    return key, rest


def _parse(text: str) -> tuple[dict[str, str], list[str]]:
    entries: dict[str, str] = {}
    problems: list[str] = []
    lines = _LINE_BREAK.split(text)
    index = 0
    while index < len(lines):
        number = index + 1
        line = lines[index].lstrip(_WHITESPACE)
        index += 1
        if not line or line[0] in "#!":
            continue  # a comment line never continues, even if it ends with a backslash
        while _continues(line):
            line = line[:-1]
            if index == len(lines):
                break
            line += lines[index].lstrip(_WHITESPACE)
            index += 1
        raw_key, raw_value = _split_entry(line)
        key = _unescape(raw_key, problems, f"(line {number})")
        value = _unescape(raw_value, problems, key or f"(line {number})")
        # MM2's ConfigDef trims every value it parses.
        entries[key] = value.strip()
    return entries, problems


def parse_properties(text: str) -> dict[str, str]:
    """The entries of a Java .properties text (later duplicates win, as in Java); ValueError if malformed."""
    entries, problems = _parse(text)
    if problems:
        raise ValueError("; ".join(problems))
    return entries


# ---------------------------------------------------------------------------------------------------------
# Classifying and checking keys


@dataclass(frozen=True)
class _Key:
    scope: Literal["top", "cluster", "flow"]
    owner: str  # the cluster alias, or "a->b", or "" at top level
    name: str  # the setting inside its scope
    spec: _Setting


def _split_list(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


def _unknown(key: str, name: str, known: list[str], prefix: str = "") -> str:
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.8)
    hint = f"did you mean {prefix}{close[0]}?" if close else "not a setting this reader knows; check its spelling"
    return f"{key}: unknown MirrorMaker 2 setting ({hint})"


def _match_alias(text: str, clusters: list[str]) -> str | None:
    """The listed cluster alias that `text` starts with, followed by a dot (longest first)."""
    for alias in sorted(clusters, key=len, reverse=True):
        if text.startswith(alias + ".") and len(text) > len(alias) + 1:
            return alias
    return None


def _classify(key: str, clusters: list[str]) -> _Key | str:
    """The key's scope and spec, or a problem line."""
    listed = ", ".join(clusters) if clusters else "none listed"
    if "->" in key:
        source, _, rest = key.partition("->")
        target = _match_alias(rest, clusters) or rest.partition(".")[0]
        name = rest[len(target) + 1 :]
        if not source or not target or not rest.startswith(target + ".") or not name:
            return f"{key}: unknown MirrorMaker 2 setting (a flow setting is written <source>-><target>.<setting>)"
        for alias in (source, target):
            if alias not in clusters:
                return f"{key}: names cluster '{alias}', which is not in clusters ({listed})"
        if source == target:
            return f"{key}: a flow needs two different clusters, got {source}->{target}"
        spec = _flow_spec(name)
        if spec is None:
            return _unknown(key, name, ["enabled", *_CONNECTOR], f"{source}->{target}.")
        return _Key("flow", f"{source}->{target}", name, spec)

    spec = _top_spec(key)
    if spec is not None:
        return _Key("top", "", key, spec)
    alias = _match_alias(key, clusters)
    if alias is not None:
        name = key[len(alias) + 1 :]
        spec = _cluster_spec(name)
        if spec is not None:
            return _Key("cluster", alias, name, spec)
        if name in _CONNECTOR or name == "enabled":
            return (f"{key}: unknown MirrorMaker 2 setting: {name} is not a per-cluster setting; set it at top level "
                    f"or for a flow, e.g. {alias}-><target>.{name}")
        return _unknown(key, name, [*_CLUSTER, *_SECURITY], f"{alias}.")
    first, dot, name = key.partition(".")
    if dot and _cluster_spec(name) is not None:
        return f"{key}: unknown MirrorMaker 2 setting: '{first}' is not in clusters ({listed})"
    return _unknown(key, key, [*_TOP, *_CONNECTOR, *_SECURITY])


_INTEGER = re.compile(r"[+-]?[0-9]+")


def _convert(key: str, value: str, spec: _Setting, problems: list[str]) -> Any:
    """The checked value of one setting, or None after adding a problem."""
    if spec.kind == "bool":
        if value.lower() in ("true", "false"):
            return value.lower() == "true"
        problems.append(f"{key}: must be true or false, got {value!r}")
    elif spec.kind == "int":
        if not _INTEGER.fullmatch(value):
            problems.append(f"{key}: must be an integer, got {value!r}")
        elif not spec.low <= int(value) <= spec.high:
            problems.append(f"{key}: must be from {spec.low} to {spec.high}, got {value}")
        else:
            return int(value)
    elif spec.kind == "list":
        return _split_list(value)
    elif spec.kind == "choice":
        for choice in spec.choices:
            if value.lower() == choice.lower():
                return choice
        problems.append(f"{key}: must be one of {', '.join(spec.choices)}, got {value!r}")
    elif spec.kind == "class":
        for simple in spec.choices:
            if value in (simple, _MM2_PACKAGE + simple):
                return simple
        allowed = ", ".join(_MM2_PACKAGE + simple for simple in spec.choices)
        problems.append(f"{key}: class {value!r} is not supported by this engine; allowed: {allowed} "
                        "(or the simple class name)")
    else:
        return value
    return None


# ---------------------------------------------------------------------------------------------------------
# Client settings: Java client (JAAS, keystores) to librdkafka

_PROVIDER_REFERENCE = re.compile(r"\$\{([A-Za-z0-9_.\-]+):([^}]*)\}")
_ENV_NAME = re.compile(r":?([A-Za-z_][A-Za-z0-9_]*)")
_JAAS_HEAD = re.compile(r"\s*(?P<module>[A-Za-z_$][\w.$]*)\s+(?P<flag>required|requisite|sufficient|optional)\b",
                        re.IGNORECASE)
_JAAS_OPTION = re.compile(r'\s*(?P<name>[A-Za-z_][\w.\-]*)\s*=\s*(?:"(?P<quoted>(?:[^"\\]|\\.)*)"|(?P<bare>[^\s;"]+))')
_JAAS_LOGIN_MODULES = {
    "PlainLoginModule": ("PLAIN",),
    "ScramLoginModule": ("SCRAM-SHA-256", "SCRAM-SHA-512"),
}


def _resolve_references(key: str, value: str, problems: list[str]) -> str | None:
    """`${env:NAME}` (MM2's EnvVarConfigProvider) becomes the plan's `${NAME}`; other providers are errors."""
    bad: list[str] = []

    def replace(match: re.Match[str]) -> str:
        provider, rest = match.group(1), match.group(2)
        name = _ENV_NAME.fullmatch(rest)
        if provider == "env" and name:
            return "${" + name.group(1) + "}"
        bad.append(match.group(0))
        return match.group(0)

    resolved = _PROVIDER_REFERENCE.sub(replace, value)
    if bad:
        problems.append(f"{key}: config provider reference {bad[0]} is not resolved by this engine; "
                        "use an environment variable, ${env:NAME} or ${NAME}")
        return None
    return resolved


def _parse_jaas(key: str, text: str, problems: list[str]) -> tuple[str, dict[str, str]] | None:
    """The login module's simple class name and its options."""
    head = _JAAS_HEAD.match(text)
    if head is None:
        problems.append(f"{key}: expected '<LoginModule class> required name=\"value\" ...;'")
        return None
    options: dict[str, str] = {}
    position = head.end()
    while True:
        option = _JAAS_OPTION.match(text, position)
        if option is None:
            break
        quoted = option.group("quoted")
        value = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else option.group("bare")
        options[option.group("name")] = value
        position = option.end()
    rest = text[position:].strip()
    if rest not in ("", ";"):
        if ";" in rest[:-1] or _JAAS_HEAD.match(rest.lstrip(";")):
            problems.append(f"{key}: holds more than one login module; a Kafka client takes exactly one")
        else:
            problems.append(f"{key}: cannot read the options from {rest[:40]!r}")
        return None
    return head.group("module").rpartition(".")[2], options


_Client = dict[str, tuple[str, str]]  # librdkafka name -> (value, the MM2 key it came from)


def _jaas_credentials(alias: str, settings: dict[str, tuple[str, Any]], client: _Client, problems: list[str]) -> None:
    key, text = settings["sasl.jaas.config"]
    parsed = _parse_jaas(key, text, problems)
    if parsed is None:
        return
    module, options = parsed
    mechanisms = _JAAS_LOGIN_MODULES.get(module)
    if mechanisms is None:
        allowed = ", ".join(_JAAS_LOGIN_MODULES)
        problems.append(f"{key}: login module {module} cannot be converted for librdkafka (only {allowed}); "
                        "write this cluster's librdkafka settings in a YAML plan instead")
        return
    missing = [name for name in ("username", "password") if not options.get(name)]
    if missing:
        problems.append(f"{key}: {module} needs {' and '.join(missing)}")
        return
    mechanism_key, mechanism = settings.get("sasl.mechanism", (f"{alias}.sasl.mechanism", None))
    if mechanism is None:
        problems.append(f"{mechanism_key}: not set, so Kafka clients would use GSSAPI; "
                        f"set {' or '.join(mechanisms)} to match the {module} in {key}")
    elif mechanism.upper() not in mechanisms:
        problems.append(f"{mechanism_key}: {mechanism!r} does not match the {module} in {key}; "
                        f"expected {' or '.join(mechanisms)}")
    client["sasl.username"] = (options["username"], key)
    client["sasl.password"] = (options["password"], key)


def _tls_settings(settings: dict[str, tuple[str, Any]], client: _Client, problems: list[str]) -> None:
    keystore_type = settings.get("ssl.keystore.type", ("", "JKS"))[1]
    if entry := settings.get("ssl.keystore.location"):
        key, location = entry
        if keystore_type == "PKCS12":
            client["ssl.keystore.location"] = (location, key)
        elif keystore_type == "PEM":  # one PEM file holding the private key and the certificate chain
            client["ssl.key.location"] = (location, key)
            client["ssl.certificate.location"] = (location, key)
        else:
            problems.append(f"{key}: a {keystore_type} keystore cannot be read by librdkafka; convert it to "
                            "PKCS12 or PEM and set ssl.keystore.type to match")
    if (entry := settings.get("ssl.keystore.password")) and keystore_type == "PKCS12":
        client["ssl.keystore.password"] = (entry[1], entry[0])
    if entry := settings.get("ssl.keystore.key"):
        client["ssl.key.pem"] = (entry[1], entry[0])
    if entry := settings.get("ssl.keystore.certificate.chain"):
        client["ssl.certificate.pem"] = (entry[1], entry[0])
    if (entry := settings.get("ssl.key.password")) and (keystore_type == "PEM" or "ssl.keystore.key" in settings):
        client["ssl.key.password"] = (entry[1], entry[0])

    truststore_type = settings.get("ssl.truststore.type", ("", "JKS"))[1]
    if entry := settings.get("ssl.truststore.location"):
        if truststore_type == "PEM":
            client["ssl.ca.location"] = (entry[1], entry[0])
        else:
            problems.append(f"{entry[0]}: a {truststore_type} truststore cannot be read by librdkafka; export its "
                            "CA certificates to a PEM file and set ssl.truststore.type = PEM")
    if entry := settings.get("ssl.truststore.certificates"):
        client["ssl.ca.pem"] = (entry[1], entry[0])
    if entry := settings.get("ssl.endpoint.identification.algorithm"):
        algorithm = entry[1].lower()
        if algorithm in ("", "https"):
            client["ssl.endpoint.identification.algorithm"] = (algorithm or "none", entry[0])
        else:
            problems.append(f"{entry[0]}: must be https or empty (no hostname check), got {entry[1]!r}")


def _client_config(alias: str, settings: dict[str, tuple[str, Any]], problems: list[str]) -> dict[str, str]:
    """librdkafka settings for one cluster from its Java client settings (`settings`: name -> (key, value))."""
    client: _Client = {}
    for name in ("security.protocol", "sasl.mechanism", "sasl.kerberos.service.name", "client.id"):
        if name in settings:
            key, value = settings[name]
            client[name] = (value, key)
    if "sasl.jaas.config" in settings:
        _jaas_credentials(alias, settings, client, problems)
    _tls_settings(settings, client, problems)
    resolved: dict[str, str] = {}
    for name, (text, key) in client.items():
        value = _resolve_references(key, text, problems)
        if value is not None:
            resolved[name] = value
    return resolved


# ---------------------------------------------------------------------------------------------------------
# The plan


def _plan_name(source: str, target: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_\-]", "-", f"{source}-to-{target}")
    name = re.sub(r"^[^A-Za-z0-9]+", "", name)[:100]
    return name or "mm2-flow"


def _choose_flow(
    flow: str | None, keys: dict[str, _Key], values: dict[str, Any], clusters: list[str], problems: list[str]
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

    enabled = [
        key for key, spec in keys.items() if spec.scope == "flow" and spec.name == "enabled" and values.get(key)
    ]
    if len(enabled) == 1:
        source, _, target = keys[enabled[0]].owner.partition("->")
        return source, target
    unreadable = [key for key, spec in keys.items() if spec.scope == "flow" and spec.name == "enabled"
                  and key not in values]
    if not clusters or unreadable:
        return None  # no clusters, or an enabled value that is not a boolean: already reported
    if not enabled:
        example = "->".join(clusters[:2]) if len(clusters) >= 2 else "a->b"
        problems.append(f"<source>-><target>.enabled: no replication flow is enabled; enable exactly one, "
                        f"e.g. {example}.enabled = true")
    else:
        flows = ", ".join(keys[key].owner for key in enabled)
        problems.append(f"{', '.join(enabled)}: {len(enabled)} replication flows are enabled ({flows}); "
                        f"choose one with flow='{keys[enabled[0]].owner}'")
    return None


class _Builder:
    """Collects the plan dict and, for each plan field, the MM2 key it came from."""

    def __init__(self, keys: dict[str, _Key], values: dict[str, Any], source: str, target: str) -> None:
        self.keys = keys
        self.values = values
        self.source = source
        self.target = target
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


def _cluster_settings(alias: str, keys: dict[str, _Key], values: dict[str, Any]) -> dict[str, tuple[str, Any]]:
    settings: dict[str, tuple[str, Any]] = {}
    for scope, owner in (("top", ""), ("cluster", alias)):
        for key, parsed in keys.items():
            relevant = parsed.name in _SECURITY or parsed.name in _CLUSTER
            if relevant and parsed.scope == scope and parsed.owner == owner and key in values:
                settings[parsed.name] = (key, values[key])
    return settings


def _build(builder: _Builder, problems: list[str]) -> set[str]:
    """Fill the builder's plan dict; return the plan paths left out because of a problem already reported."""
    keys, values = builder.keys, builder.values
    broken: set[str] = set()
    enabled_key = f"{builder.flow}.enabled"
    builder.put("name", _plan_name(builder.source, builder.target), enabled_key)

    for side, alias in (("source", builder.source), ("target", builder.target)):
        settings = _cluster_settings(alias, keys, values)
        builder.put(f"{side}.alias", alias, "clusters")
        bootstrap = settings.get("bootstrap.servers")
        if bootstrap is None or not bootstrap[1]:
            key = f"{alias}.bootstrap.servers"
            if key not in keys:
                problems.append(f"{key}: required: the {side} cluster '{alias}' of flow {builder.flow} needs "
                                "its bootstrap servers")
            else:
                problems.append(f"{key}: must not be empty")
            broken.add(side)
        else:
            servers = _resolve_references(bootstrap[0], ",".join(_split_list(bootstrap[1])), problems)
            if servers is None:
                broken.add(side)
            else:
                builder.put(f"{side}.bootstrap_servers", servers, bootstrap[0])
        client = _client_config(alias, settings, problems)
        if client:
            builder.put(f"{side}.client", client, f"{alias}.*")

    builder.map("topics.include", "topics")
    builder.map("topics.exclude", "topics.exclude", "topics.blacklist",
                convert=lambda items: [p for p in items if p not in DEFAULT_TOPIC_EXCLUDES])
    builder.map("groups.include", "groups")
    builder.map("groups.exclude", "groups.exclude", "groups.blacklist",
                convert=lambda items: [p for p in items if p not in DEFAULT_GROUP_EXCLUDES])

    # MM2's default policy is DefaultReplicationPolicy (the plan's is identity).
    policy = builder.lookup("replication.policy.class")
    kind = "identity" if policy and policy[1] == "IdentityReplicationPolicy" else "default"
    builder.put("replication_policy.type", kind, policy[0] if policy else "replication.policy.class")
    builder.map("replication_policy.separator", "replication.policy.separator")
    builder.map("replication_policy.internal_separator_enabled", "replication.policy.internal.topic.separator.enabled")

    builder.map("sync.configs", "sync.topic.configs.enabled")
    builder.map("sync.acls", "sync.topic.acls.enabled")
    builder.map("sync.config_exclude", "config.properties.exclude", "config.properties.blacklist",
                convert=lambda items: [p for p in items if p not in MM2_CONFIG_EXCLUDES])
    factor = builder.lookup("replication.factor")
    builder.put("sync.replication_factor", factor[1] if factor else 2, factor[0] if factor else "replication.factor")

    builder.map("engine.heartbeat_interval_s", "emit.heartbeats.interval.seconds")
    copied = builder.lookup("heartbeats.replication.enabled")  # MM2 copies heartbeats topics by default
    builder.put("engine.replicate_heartbeats", copied[1] if copied else True,
                copied[0] if copied else "heartbeats.replication.enabled")
    builder.map("engine.refresh_interval_s", "refresh.topics.interval.seconds")
    intervals = [found for name in ("emit.checkpoints.interval.seconds", "sync.group.offsets.interval.seconds")
                 if (found := builder.lookup(name)) is not None]
    if intervals:
        key, seconds = min(intervals, key=lambda found: found[1])
        builder.put("cutover.checkpoint_interval_s", seconds, key)
    offsets = builder.lookup("sync.group.offsets.enabled")
    builder.put("cutover.sync_group_offsets", offsets[1] if offsets else False,
                offsets[0] if offsets else "sync.group.offsets.enabled")

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


def _unused_keys(keys: dict[str, _Key], flow: str, source: str, target: str) -> list[str]:
    """Recognised keys that apply to this flow but that the plan does not need."""
    unused = []
    for key, parsed in keys.items():
        applies = (parsed.scope == "top" or (parsed.scope == "flow" and parsed.owner == flow)
                   or (parsed.scope == "cluster" and parsed.owner in (source, target)))
        if applies and not parsed.spec.mapped and key != "clusters":
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


def plan_from_mm2_properties(text: str, source_name: str, flow: str | None = None) -> MigrationPlan:
    """The plan for one replication flow of a MirrorMaker 2 properties file; PlanError lists every problem.

    `flow` ("a->b") chooses the flow; without it the file must enable exactly one (`a->b.enabled = true`).
    """
    entries, problems = _parse(text)

    clusters: list[str] = []
    if "clusters" in entries:
        clusters = list(dict.fromkeys(_split_list(entries["clusters"])))
        if not clusters:
            problems.append("clusters: must list the cluster aliases, e.g. clusters = source, target")
    else:
        problems.append("clusters: required: list the cluster aliases, e.g. clusters = source, target")

    keys: dict[str, _Key] = {}
    values: dict[str, Any] = {}
    for key, value in entries.items():
        classified = _classify(key, clusters)
        if isinstance(classified, str):
            problems.append(classified)
            continue
        keys[key] = classified
        converted = _convert(key, value, classified.spec, problems)
        if converted is not None:
            values[key] = converted

    chosen = _choose_flow(flow, keys, values, clusters, problems)
    if chosen is None:
        raise PlanError(source_name, problems)

    source, target = chosen
    builder = _Builder(keys, values, source, target)
    broken = _build(builder, problems)
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
        raise PlanError(source_name, problems) from None
    problems.extend(_filter_problems(plan, builder.origins))
    if problems:
        raise PlanError(source_name, problems)
    return plan


def load_mm2_config(path: str | Path, flow: str | None = None) -> MigrationPlan:
    """Read a MirrorMaker 2 dedicated-mode properties file into a plan for one of its flows (see the module doc)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise PlanError(str(path), [f"(file): cannot read it: {error.strerror}"]) from None
    except UnicodeDecodeError as error:
        raise PlanError(str(path), [f"(file): not UTF-8 text: {error}"]) from None
    return plan_from_mm2_properties(text, str(path), flow)
