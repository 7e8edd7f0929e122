"""The plan dict built from one flow of a MirrorMaker 2 file, each plan field remembering the MM2 key it came from:
clusters and their client settings, filters, naming, the periodic work of MM2's dedicated mode, exactly-once."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mirror_engine.mm2.client_settings import client_config, registry_client_config
from mirror_engine.mm2.flows import enabled_flows, plan_name
from mirror_engine.mm2.naming import alias_problems, naming_fields, same_cluster_problem
from mirror_engine.mm2.settings import PROJECT_FLOW, REGISTRY_PREFIX, KeyInfo
from mirror_engine.mm2.values import PLAN_CLIENT_SETTINGS
from mirror_engine.plan import DEFAULT_GROUP_EXCLUDES, DEFAULT_TOPIC_EXCLUDES, MM2_CONFIG_EXCLUDES


class PlanBuilder:
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
            relevant = info.name in PLAN_CLIENT_SETTINGS and not (scope == "top" and info.name == "client.id")
            if relevant and info.scope == scope and info.owner == owner and key in values:
                settings[info.name] = (key, values[key])
    return settings


def _cluster_fields(builder: PlanBuilder, problems: list[str], broken: set[str]) -> None:
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


def _periodic_fields(builder: PlanBuilder, warnings: list[str]) -> None:
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


def _return_flow_field(builder: PlanBuilder) -> None:
    """A file that also enables the flow the other way (active/active) names it as the return flow: a group that
    failed over to this flow's source is checkpointed back to its original topics on the target (MM2 itself
    skips those topics as cycles: a group's way back is left to its operators). Under the identity policy a copy
    cannot be told from the source's own topics: no return flow."""
    back = f"{builder.target}->{builder.source}"
    prefixing = builder.data.get("replication_policy", {}).get("type", "default") == "default"
    if prefixing and back in enabled_flows(builder.keys, builder.values):
        builder.put("cutover.return_flow", plan_name(builder.target, builder.source), f"{back}.enabled")


def _record_fields(builder: PlanBuilder, problems: list[str]) -> None:
    """What MM2 would do to each record that the engine does not (converters are checked by type)."""
    transforms = builder.lookup("transforms")
    if transforms is not None and transforms[1]:
        problems.append(f"{transforms[0]}: MM2 would apply the transforms {', '.join(transforms[1])} to every "
                        "record; the engine copies records unchanged, so remove them or keep running MM2")


def _schemas_fields(builder: PlanBuilder, problems: list[str]) -> None:
    """The flow's schema registries, from the project's own keys: `<alias>.mirror-engine.schema.registry.url` (and
    the registry client's settings beside it) for both clusters, and `mirror-engine.schemas.*` for the flow."""
    registries: dict[str, dict[str, Any]] = {}
    for side, alias in (("source", builder.source), ("target", builder.target)):
        prefix = f"{alias}.{REGISTRY_PREFIX}"
        given = {key[len(prefix):]: (key, str(value)) for key, value in builder.values.items()
                 if key.startswith(prefix)}
        if given:
            url = given.pop("url", ("", None))[1]
            found = registry_client_config(alias, given, problems)
            registries[side] = {"url": url, "client": found} if url else {"client": found}
            builder.origins[f"schemas.{side}"] = f"{prefix}url"
    if not registries:
        return
    missing = [alias for side, alias in (("source", builder.source), ("target", builder.target))
               if "url" not in registries.get(side, {})]
    if missing:
        problems.append(f"{missing[0]}.{REGISTRY_PREFIX}url: the flow {builder.flow} names a schema registry for "
                        f"one of its clusters only: give {missing[0]}'s too")
        return
    builder.data["schemas"] = registries
    for key in PROJECT_FLOW:
        found_value = builder.lookup(key)
        if found_value is not None:
            field = key.removeprefix("mirror-engine.schemas.").replace(".", "_")
            builder.put(f"schemas.{field}", found_value[1], found_value[0])


def build_plan_fields(builder: PlanBuilder, problems: list[str], warnings: list[str]) -> set[str]:
    """Fill the builder's plan dict; return the plan paths left out because of a problem already reported."""
    values = builder.values
    broken: set[str] = set()
    builder.put("name", plan_name(builder.source, builder.target), f"{builder.flow}.enabled")
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
    _return_flow_field(builder)
    _schemas_fields(builder, problems)
    if (lag := builder.lookup("offset.lag.max")) is not None:
        builder.put("engine.offset_lag_max", lag[1], lag[0])

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


def unused_keys(keys: dict[str, KeyInfo], flow: str, source: str, target: str) -> list[str]:
    """Keys MM2 uses for this flow that the plan does not need."""
    unused = []
    for key, info in keys.items():
        applies = (info.scope == "top" or (info.scope == "flow" and info.owner == flow)
                   or (info.scope == "cluster" and info.owner in (source, target)))
        mapped = info.spec is not None and info.spec.mapped
        if applies and info.role == "used" and not mapped and key != "clusters":
            unused.append(key)
    return unused
