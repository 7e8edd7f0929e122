"""Which keys MirrorMaker 2's dedicated mode reads, where, and as what type: the catalogue `mm2_config` checks a
file against.

MM2 never refuses a key (`MirrorMakerConfig` is an `AbstractConfig` that keeps what it does not define), so
this module sorts each key into one of three roles instead:

- `used`: MM2 reads it in that scope, and parses it with its `ConfigDef` type (a wrong type fails MM2, so it
  fails here too);
- `ignored`: a real Kafka/Connect setting that MM2 drops in that scope (a no-op: a warning says where it
  would take effect);
- `unknown`: no Kafka setting at all (a warning, with "did you mean" for a near miss).

Sources (apache/kafka, `connect/mirror`, `connect/mirror-client`, `connect/runtime`, `clients`):
`MirrorMakerConfig` (`config()`, `clusterProps`, `workerConfig`, `connectorBaseConfig`), `MirrorConnectorConfig`
/ `MirrorSourceConfig` / `MirrorCheckpointConfig` / `MirrorHeartbeatConfig` (connector keys),
`MirrorClientConfig.CLIENT_CONFIG_DEF` (the only unprefixed cluster keys the replication clients take),
`WorkerConfig` / `DistributedConfig` / `RestServerConfig` (Connect worker and REST keys), `ConnectorConfig`,
and the producer, consumer and admin client configs.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Literal

__all__ = ["MM2_PACKAGE", "PROJECT_FLOW", "REGISTRY_PREFIX", "KeyInfo", "Setting", "classify_key",
           "cluster_client_setting"]

MM2_PACKAGE = "org.apache.kafka.connect.mirror."
_INT_RANGE = (-(2**31), 2**31 - 1)
_SHORT_RANGE = (-(2**15), 2**15 - 1)
_LONG_RANGE = (-(2**63), 2**63 - 1)


@dataclass(frozen=True)
class Setting:
    """How one setting's value is parsed (ConfigDef's type), and whether the plan uses it (`mapped`)."""

    kind: Literal["bool", "int", "double", "list", "text", "choice", "class"]
    mapped: bool = False
    # "choice": allowed values (matched case-insensitively); "class": allowed simple class names.
    choices: tuple[str, ...] = ()
    low: int = _INT_RANGE[0]
    high: int = _INT_RANGE[1]


def _int(bounds: tuple[int, int] = _INT_RANGE, low: int | None = None, mapped: bool = False) -> Setting:
    return Setting("int", mapped=mapped, low=bounds[0] if low is None else low, high=bounds[1])


_BOOL, _TEXT, _LIST, _DOUBLE = Setting("bool"), Setting("text"), Setting("list"), Setting("double")
_INT, _SHORT, _LONG = _int(), _int(_SHORT_RANGE), _int(_LONG_RANGE)
_PROTOCOL = Setting("choice", mapped=True, choices=("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"))

# ---- Connector settings: top level (every flow) or `<a>-><b>.<name>` ----------------------------------------
CONNECTOR: dict[str, Setting] = {
    "topics": Setting("list", mapped=True),
    "topics.exclude": Setting("list", mapped=True),
    "topics.blacklist": Setting("list", mapped=True),  # before Kafka 4.0
    "groups": Setting("list", mapped=True),
    "groups.exclude": Setting("list", mapped=True),
    "groups.blacklist": Setting("list", mapped=True),
    "config.properties.exclude": Setting("list", mapped=True),
    "config.properties.blacklist": Setting("list", mapped=True),
    "replication.policy.class": Setting("class", mapped=True,
                                        choices=("DefaultReplicationPolicy", "IdentityReplicationPolicy")),
    "replication.policy.separator": Setting("text", mapped=True),
    "replication.policy.internal.topic.separator.enabled": Setting("bool", mapped=True),
    "source.cluster.alias": Setting("text", mapped=True),
    "target.cluster.alias": Setting("text", mapped=True),
    "replication.factor": _int(mapped=True),
    "sync.topic.configs.enabled": Setting("bool", mapped=True),
    "sync.topic.acls.enabled": Setting("bool", mapped=True),
    "sync.group.offsets.enabled": Setting("bool", mapped=True),
    "emit.heartbeats.interval.seconds": _int(_LONG_RANGE, mapped=True),
    "emit.checkpoints.interval.seconds": _int(_LONG_RANGE, mapped=True),
    "sync.group.offsets.interval.seconds": _int(_LONG_RANGE, mapped=True),
    "refresh.topics.interval.seconds": _int(_LONG_RANGE, mapped=True),
    "heartbeats.replication.enabled": Setting("bool", mapped=True),
    "exactly.once.support": Setting("choice", mapped=True, choices=("requested", "required")),
    "key.converter": Setting("class", mapped=True, choices=("ByteArrayConverter",)),
    "value.converter": Setting("class", mapped=True, choices=("ByteArrayConverter",)),
    "header.converter": Setting("class", mapped=True, choices=("ByteArrayConverter",)),
    # Only MM2's own filters: their behaviour is what the plan implements.
    "topic.filter.class": Setting("class", choices=("DefaultTopicFilter",)),
    "group.filter.class": Setting("class", choices=("DefaultGroupFilter",)),
    "config.property.filter.class": Setting("class", choices=("DefaultConfigPropertyFilter",)),
    # Accepted, not needed by this engine.
    "enabled": _BOOL, "name": _TEXT, "connector.class": _TEXT, "tasks.max": _int(low=1),
    "tasks.max.enforce": _BOOL, "transforms": _LIST, "predicates": _LIST, "config.action.reload": _TEXT,
    "errors.retry.timeout": _LONG, "errors.retry.delay.max.ms": _LONG, "errors.tolerance": _TEXT,
    "errors.log.enable": _BOOL, "errors.log.include.messages": _BOOL,
    "admin.timeout.ms": _LONG, "forwarding.admin.class": _TEXT, "metric.reporters": _LIST,
    "offset-syncs.topic.location": Setting("choice", choices=("source", "target")),
    "offset.lag.max": _int(_LONG_RANGE, low=0, mapped=True), "emit.offset-syncs.enabled": _BOOL,
    "offset-syncs.topic.replication.factor": _SHORT, "checkpoints.topic.replication.factor": _SHORT,
    "heartbeats.topic.replication.factor": _SHORT,
    "consumer.poll.timeout.ms": _LONG,
    # The periodic work of MM2's dedicated mode, run beside the copy by `run` and `worker`.
    "refresh.topics.enabled": Setting("bool", mapped=True), "refresh.groups.enabled": Setting("bool", mapped=True),
    "refresh.groups.interval.seconds": _int(_LONG_RANGE, mapped=True),
    "sync.topic.configs.interval.seconds": _int(_LONG_RANGE, mapped=True),
    "sync.topic.acls.interval.seconds": _int(_LONG_RANGE, mapped=True),
    "emit.heartbeats.enabled": Setting("bool", mapped=True), "emit.checkpoints.enabled": Setting("bool", mapped=True),
}

# ---- Client security (CommonClientConfigs, SslConfigs, SaslConfigs) ----------------------------------------
# MirrorClientConfig.CLIENT_CONFIG_DEF: with bootstrap.servers, the only `<a>.<name>` keys MM2's replication
# clients take; also read at top level for every cluster.
SECURITY: dict[str, Setting] = {
    "security.protocol": _PROTOCOL,
    "sasl.mechanism": Setting("text", mapped=True),
    "sasl.jaas.config": Setting("text", mapped=True),
    "sasl.kerberos.service.name": Setting("text", mapped=True),
    "ssl.keystore.type": Setting("choice", mapped=True, choices=("JKS", "PKCS12", "PEM")),
    "ssl.keystore.location": Setting("text", mapped=True),
    "ssl.keystore.password": Setting("text", mapped=True),
    "ssl.key.password": Setting("text", mapped=True),
    "ssl.keystore.key": Setting("text", mapped=True),
    "ssl.keystore.certificate.chain": Setting("text", mapped=True),
    "ssl.truststore.type": Setting("choice", mapped=True, choices=("JKS", "PKCS12", "PEM")),
    "ssl.truststore.location": Setting("text", mapped=True),
    "ssl.truststore.certificates": Setting("text", mapped=True),
    "ssl.endpoint.identification.algorithm": Setting("text", mapped=True),
    # OAUTHBEARER with client credentials (OAuthBearerLoginCallbackHandler) and AWS MSK IAM's handler.
    "sasl.login.callback.handler.class": Setting("text", mapped=True),
    "sasl.client.callback.handler.class": Setting("text", mapped=True),
    "sasl.oauthbearer.token.endpoint.url": Setting("text", mapped=True),
    # JVM TLS/SASL tuning with no librdkafka counterpart.
    "ssl.truststore.password": _TEXT, "ssl.protocol": _TEXT, "ssl.provider": _TEXT, "ssl.cipher.suites": _LIST,
    "ssl.enabled.protocols": _LIST, "ssl.keymanager.algorithm": _TEXT, "ssl.trustmanager.algorithm": _TEXT,
    "ssl.secure.random.implementation": _TEXT, "ssl.engine.factory.class": _TEXT,
    "sasl.login.class": _TEXT, "sasl.kerberos.kinit.cmd": _TEXT, "sasl.kerberos.ticket.renew.window.factor": _DOUBLE,
    "sasl.kerberos.ticket.renew.jitter": _DOUBLE, "sasl.kerberos.min.time.before.relogin": _LONG,
    "sasl.login.refresh.window.factor": _DOUBLE, "sasl.login.refresh.window.jitter": _DOUBLE,
    "sasl.login.refresh.min.period.seconds": _SHORT, "sasl.login.refresh.buffer.seconds": _SHORT,
    "sasl.login.connect.timeout.ms": _INT, "sasl.login.read.timeout.ms": _INT,
    "sasl.login.retry.backoff.max.ms": _LONG, "sasl.login.retry.backoff.ms": _LONG,
}
# sasl.oauthbearer.* settings (many, and growing): recognised by prefix.
_SECURITY_PREFIXES = ("sasl.oauthbearer.",)

# ---- Connect worker (WorkerConfig, DistributedConfig): `<a>.<name>` for the worker writing to `a` ----------
WORKER: dict[str, Setting] = {
    "bootstrap.servers": Setting("list", mapped=True), "client.id": Setting("text", mapped=True),
    "exactly.once.source.support": Setting("choice", mapped=True, choices=("disabled", "enabled", "preparing")),
    # The worker's converters: only bytes, as MM2's defaults, leave records as the engine copies them.
    "key.converter": CONNECTOR["key.converter"], "value.converter": CONNECTOR["value.converter"],
    "header.converter": CONNECTOR["header.converter"],
    "group.id": _TEXT, "client.dns.lookup": _TEXT, "task.shutdown.graceful.timeout.ms": _LONG,
    "offset.flush.interval.ms": _LONG, "offset.flush.timeout.ms": _LONG, "plugin.path": _LIST,
    "plugin.discovery": Setting("choice", choices=("only_scan", "hybrid_warn", "hybrid_fail", "service_load")),
    "metrics.sample.window.ms": _LONG, "metrics.num.samples": _INT, "metrics.recording.level": _TEXT,
    "metric.reporters": _LIST, "auto.include.jmx.reporter": _BOOL, "config.providers": _LIST,
    "connector.client.config.override.policy": _TEXT, "topic.creation.enable": _BOOL,
    "topic.tracking.enable": _BOOL, "topic.tracking.allow.reset": _BOOL,
    "session.timeout.ms": _INT, "rebalance.timeout.ms": _INT, "heartbeat.interval.ms": _INT,
    "metadata.max.age.ms": _LONG, "send.buffer.bytes": _INT, "receive.buffer.bytes": _INT,
    "reconnect.backoff.ms": _LONG, "reconnect.backoff.max.ms": _LONG, "socket.connection.setup.timeout.ms": _LONG,
    "socket.connection.setup.timeout.max.ms": _LONG, "retry.backoff.ms": _LONG, "retry.backoff.max.ms": _LONG,
    "request.timeout.ms": _INT, "connections.max.idle.ms": _LONG, "worker.sync.timeout.ms": _INT,
    "worker.unsync.backoff.ms": _INT, "offset.storage.topic": _TEXT, "offset.storage.partitions": _INT,
    "offset.storage.replication.factor": _SHORT, "config.storage.topic": _TEXT,
    "config.storage.replication.factor": _SHORT, "status.storage.topic": _TEXT, "status.storage.partitions": _INT,
    "status.storage.replication.factor": _SHORT, "connect.protocol": _TEXT,
    "scheduled.rebalance.max.delay.ms": _INT, "inter.worker.key.ttl.ms": _INT,
    "inter.worker.key.generation.algorithm": _TEXT, "inter.worker.key.size": _INT,
    "inter.worker.signature.algorithm": _TEXT, "inter.worker.verification.algorithms": _LIST,
    "metadata.recovery.strategy": _TEXT,
}
# Worker keys by prefix: internal topics' own settings, converter settings, provider settings.
_WORKER_PREFIXES = ("offset.storage.", "config.storage.", "status.storage.", "key.converter.", "value.converter.",
                    "header.converter.", "config.providers.")
# MirrorMakerConfig.workerConfig also takes these top-level prefixes (matched as plain string prefixes).
_TOP_WORKER_PREFIXES = ("offset.storage", "config.storage", "status.storage", "key.converter", "value.converter",
                        "header.converter", "task", "worker", "replication.policy")

# ---- REST (RestServerConfig): top level, for the internal REST server of `dedicated.mode.enable.internal.rest`
REST: dict[str, Setting] = {
    "listeners": _LIST, "rest.advertised.host.name": _TEXT, "rest.advertised.port": _INT,
    "rest.advertised.listener": _TEXT, "access.control.allow.origin": _TEXT, "access.control.allow.methods": _TEXT,
    "response.http.headers.config": _TEXT, "ssl.client.auth": _TEXT, "admin.listeners": _LIST,
    "rest.extension.classes": _LIST,
}
_REST_PREFIXES = ("listeners.https.", "admin.listeners.https.")

# ---- MirrorMakerConfig's own top-level keys ------------------------------------------------------------------
TOP: dict[str, Setting] = {
    "clusters": Setting("list", mapped=True),
    "dedicated.mode.enable.internal.rest": _BOOL,
    "config.providers": _LIST,
    # Plugins(originalsStrings()) reads these from the top level.
    "plugin.path": _LIST,
    "plugin.discovery": WORKER["plugin.discovery"],
    # MM2 reads it only as `<target>.exactly.once.source.support`; the plan applies a top-level one too.
    "exactly.once.source.support": WORKER["exactly.once.source.support"],
}

_CLIENT_PREFIXES = ("consumer.", "producer.", "admin.")
_ISOLATION_LEVEL = Setting("choice", choices=("read_committed", "read_uncommitted"))

# Producer, consumer and admin client settings (ProducerConfig, ConsumerConfig, AdminClientConfig) that are
# not security settings: unprefixed under a cluster alias, MM2's replication clients never see them.
CLIENT_ONLY = frozenset({
    "acks", "allow.auto.create.topics", "auto.commit.interval.ms", "auto.offset.reset", "batch.size",
    "buffer.memory", "check.crcs", "client.rack", "compression.gzip.level", "compression.lz4.level",
    "compression.type", "compression.zstd.level", "default.api.timeout.ms", "delivery.timeout.ms",
    "enable.auto.commit", "enable.idempotence", "enable.metrics.push", "exclude.internal.topics", "fetch.max.bytes",
    "fetch.max.wait.ms", "fetch.min.bytes", "group.instance.id", "group.protocol", "group.remote.assignor",
    "interceptor.classes", "isolation.level", "key.deserializer", "key.serializer", "linger.ms", "max.block.ms",
    "max.in.flight.requests.per.connection", "max.partition.fetch.bytes", "max.poll.interval.ms",
    "max.poll.records", "max.request.size", "metadata.max.idle.ms", "partition.assignment.strategy",
    "partitioner.adaptive.partitioning.enable", "partitioner.availability.timeout.ms", "partitioner.class",
    "partitioner.ignore.keys", "retries", "security.providers", "transaction.timeout.ms", "transactional.id",
    "value.deserializer", "value.serializer",
})
# Worker keys that are also plain client settings: the worker's own clients use them, the replication
# clients do not.
_WORKER_CLIENT_SHARED = frozenset({
    "client.dns.lookup", "metadata.max.age.ms", "send.buffer.bytes", "receive.buffer.bytes",
    "reconnect.backoff.ms", "reconnect.backoff.max.ms", "socket.connection.setup.timeout.ms",
    "socket.connection.setup.timeout.max.ms", "retry.backoff.ms", "retry.backoff.max.ms", "request.timeout.ms",
    "connections.max.idle.ms", "metrics.sample.window.ms", "metrics.num.samples", "metrics.recording.level",
    "metric.reporters", "session.timeout.ms", "heartbeat.interval.ms", "metadata.recovery.strategy",
})


# ---- The project's own keys (MM2 has no schema registry settings): `mirror-engine.` before the name -----------
PROJECT_PREFIX = "mirror-engine."
# Under a cluster alias: that cluster's schema registry, `<alias>.mirror-engine.schema.registry.url` and the
# registry client's settings beside it (basic.auth.user.info, bearer.auth.token, ssl.*).
REGISTRY_PREFIX = PROJECT_PREFIX + "schema.registry."
# At top level or for one flow: how the flow's schemas move (the plan's `schemas` section).
PROJECT_FLOW: dict[str, Setting] = {
    "mirror-engine.schemas.ids": Setting("choice", mapped=True, choices=("translate", "keep")),
    "mirror-engine.schemas.subject.strategy": Setting("choice", mapped=True,
                                                      choices=("topic_name", "record_name", "topic_record_name")),
    "mirror-engine.schemas.subjects": Setting("list", mapped=True),
    "mirror-engine.schemas.unknown.ids": Setting("choice", mapped=True, choices=("stop", "copy")),
    "mirror-engine.schemas.compatibility": Setting("bool", mapped=True),
    "mirror-engine.schemas.soft.deleted": Setting("bool", mapped=True),
}
_PROJECT_NOTE = "the project's own setting (MM2 has none for schema registries)"


@dataclass(frozen=True)
class KeyInfo:
    """Where a key applies, how MM2 parses it (`spec`, None if MM2 does not parse it there), and its role."""

    scope: Literal["top", "cluster", "flow"]
    owner: str  # the cluster alias, "a->b", or "" at top level
    name: str  # the setting inside its scope
    spec: Setting | None
    role: Literal["used", "ignored", "unknown"]
    note: str = ""  # for ignored and unknown keys: the warning, without the key


def _prefixed(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name.startswith(prefix) and len(name) > len(prefix) for prefix in prefixes)


def cluster_client_setting(name: str) -> Setting | None:
    """The spec of a setting the replication clients of a cluster take from `<a>.<name>` (or the top level)."""
    if name in SECURITY:
        return SECURITY[name]
    if name == "bootstrap.servers":
        return WORKER[name]
    return _TEXT if _prefixed(name, ("sasl.login.", "sasl.kerberos.", *_SECURITY_PREFIXES)) else None


def _client_prefixed(name: str) -> Setting | None:
    if name == "consumer.isolation.level":
        return _ISOLATION_LEVEL
    return _TEXT if _prefixed(name, _CLIENT_PREFIXES) else None


def _suggest(name: str, candidates: list[str], prefix: str = "") -> str:
    """A "did you mean" for a near miss: a close spelling, or the same dotted words in another order."""
    words = sorted(name.split("."))
    for candidate in candidates:
        if sorted(candidate.split(".")) == words and candidate != name:
            return f"; did you mean {prefix}{candidate}?"
    close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.8)
    return f"; did you mean {prefix}{close[0]}?" if close else ""


def _unknown(scope: Literal["top", "cluster", "flow"], owner: str, name: str, candidates: list[str],
             prefix: str = "") -> KeyInfo:
    hint = _suggest(name, candidates, prefix)
    note = f"not a MirrorMaker 2 setting; MM2 ignores it{hint or ' (check its spelling)'}"
    return KeyInfo(scope, owner, name, None, "unknown", note)


def _top_level(key: str) -> KeyInfo | None:
    if key in PROJECT_FLOW:
        return KeyInfo("top", "", key, PROJECT_FLOW[key], "used", _PROJECT_NOTE)
    spec = TOP.get(key) or CONNECTOR.get(key) or SECURITY.get(key) or cluster_client_setting(key)
    if spec is not None:
        return KeyInfo("top", "", key, spec, "used")
    if key in REST or _prefixed(key, _REST_PREFIXES):
        return KeyInfo("top", "", key, REST.get(key, _TEXT), "used")
    if key.startswith(_TOP_WORKER_PREFIXES) or _prefixed(key, _WORKER_PREFIXES):
        return KeyInfo("top", "", key, WORKER.get(key, _TEXT), "used")
    if _prefixed(key, _CLIENT_PREFIXES):
        return KeyInfo("top", "", key, None, "ignored",
                       "MM2's dedicated mode ignores client settings at top level; write "
                       f"<alias>.{key} for one cluster or <source>-><target>.{key} for one flow")
    if key in WORKER:
        return KeyInfo("top", "", key, None, "ignored",
                       f"a Connect worker setting, which MM2 ignores at top level; write <alias>.{key} for the "
                       "worker that writes to that cluster")
    if key in CLIENT_ONLY:
        return KeyInfo("top", "", key, None, "ignored",
                       f"a client setting, which MM2 ignores at top level; write <alias>.consumer.{key}, "
                       f"<alias>.producer.{key} or <alias>.admin.{key}")
    return None


def _cluster_level(alias: str, name: str) -> KeyInfo:
    if _prefixed(name, (REGISTRY_PREFIX,)):
        return KeyInfo("cluster", alias, name, Setting("text", mapped=True), "used", _PROJECT_NOTE)
    spec = cluster_client_setting(name)
    if spec is not None or name in ("client.id", "exactly.once.source.support"):
        return KeyInfo("cluster", alias, name, spec or WORKER[name], "used")
    spec = _client_prefixed(name)
    if spec is not None:
        return KeyInfo("cluster", alias, name, spec, "used")
    if name in CLIENT_ONLY or name in _WORKER_CLIENT_SHARED:
        used_by_worker = " (only the Connect worker writing to this cluster uses it)" if name in WORKER else ""
        return KeyInfo("cluster", alias, name, WORKER.get(name), "ignored",
                       f"MM2's replication clients ignore unprefixed client settings under a cluster{used_by_worker}"
                       f"; write {alias}.consumer.{name}, {alias}.producer.{name} or {alias}.admin.{name}")
    if name in WORKER or _prefixed(name, _WORKER_PREFIXES):
        return KeyInfo("cluster", alias, name, WORKER.get(name, _TEXT), "used")
    if name in CONNECTOR:
        return KeyInfo("cluster", alias, name, None, "ignored",
                       f"{name} is not a per-cluster setting, so MM2 ignores it here; set it at top level or "
                       f"for a flow, e.g. {alias}-><target>.{name}")
    if name in REST or _prefixed(name, _REST_PREFIXES):
        return KeyInfo("cluster", alias, name, None, "ignored", "MM2 reads REST settings at top level only")
    candidates = [*SECURITY, *WORKER, "bootstrap.servers"]
    return _unknown("cluster", alias, name, candidates, f"{alias}.")


def _flow_level(flow: str, name: str) -> KeyInfo:
    if name == "enabled":
        return KeyInfo("flow", flow, name, Setting("bool", mapped=True), "used")
    if name in PROJECT_FLOW:
        return KeyInfo("flow", flow, name, PROJECT_FLOW[name], "used", _PROJECT_NOTE)
    spec = CONNECTOR.get(name) or _client_prefixed(name)
    if spec is not None:
        return KeyInfo("flow", flow, name, spec, "used")
    return _unknown("flow", flow, name, ["enabled", *CONNECTOR], f"{flow}.")


def _match_alias(text: str, clusters: list[str]) -> str | None:
    """The listed cluster alias that `text` starts with, followed by a dot (longest first)."""
    for alias in sorted(clusters, key=len, reverse=True):
        if text.startswith(alias + ".") and len(text) > len(alias) + 1:
            return alias
    return None


def classify_key(key: str, clusters: list[str]) -> KeyInfo | str:
    """The key's scope, spec and role; or an error line for a flow MM2 cannot have (a cluster not listed)."""
    if "->" in key:
        source, _, rest = key.partition("->")
        target = _match_alias(rest, clusters) or rest.partition(".")[0]
        name = rest[len(target) + 1 :]
        if not source or not target or not rest.startswith(target + ".") or not name:
            return _unknown("top", "", key, [])
        listed = ", ".join(clusters) if clusters else "none listed"
        for alias in (source, target):
            if alias not in clusters:
                return f"{key}: names cluster '{alias}', which is not in clusters ({listed})"
        flow = f"{source}->{target}"
        if source == target:
            return KeyInfo("flow", flow, name, None, "ignored",
                           "MM2 runs no flow from a cluster to itself, so it ignores this key")
        return _flow_level(flow, name)

    alias = _match_alias(key, clusters)
    if alias is not None:
        scoped = _cluster_level(alias, key[len(alias) + 1 :])
        # MM2 reads every key twice: as `<alias>.<setting>` for that cluster and, whole, as a connector setting
        # (MirrorMakerConfig.connectorBaseConfig). With clusters named `source` and `target`, a top-level
        # `source.cluster.alias` is the connector's setting, not a setting of cluster `source`.
        top = None if scoped.role == "used" else _top_level(key)
        return top if top is not None and top.role == "used" else scoped
    top = _top_level(key)
    if top is not None:
        return top
    first, dot, name = key.partition(".")
    if dot and _cluster_level(first, name).role == "used":
        listed = ", ".join(clusters) if clusters else "none listed"
        return KeyInfo("top", "", key, None, "ignored",
                       f"'{first}' is not in clusters ({listed}), so MM2 ignores it")
    return _unknown("top", "", key, [*TOP, *CONNECTOR, *SECURITY, *REST])
