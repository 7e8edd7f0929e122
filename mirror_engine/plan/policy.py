"""Replication policies: how replicated topics are named and which topics are internal, as in MM2.

The semantics follow MM2's `ReplicationPolicy`, `DefaultReplicationPolicy` and `IdentityReplicationPolicy`
exactly, quirks included, because MM2 and its clients (`RemoteClusterUtils`) infer a topic's origin from
these names: a replicator that names differently cannot hand over to or from MM2.
"""

from typing import Protocol

__all__ = [
    "HEARTBEATS_TOPIC",
    "DefaultReplicationPolicy",
    "IdentityReplicationPolicy",
    "ReplicationPolicy",
    "checkpoints_topic",
    "is_cycle",
    "make_policy",
    "offset_syncs_topic",
]

HEARTBEATS_TOPIC = "heartbeats"

# Internal topic names (DefaultReplicationPolicy). Since Kafka 3.1 (KIP-690) a custom separator is used
# in these names too; `internal_separator_enabled=False` (KIP-949) restores the older "." names.


def _internal_separator(separator: str, internal_separator_enabled: bool) -> str:
    return separator if internal_separator_enabled else "."


def offset_syncs_topic(
    other_alias: str, separator: str = ".", internal_separator_enabled: bool = True
) -> str:
    """Offset-syncs topic name, e.g. `mm2-offset-syncs.B.internal` (named for the *other* cluster)."""
    sep = _internal_separator(separator, internal_separator_enabled)
    return f"mm2-offset-syncs{sep}{other_alias}{sep}internal"


def checkpoints_topic(
    source_alias: str, separator: str = ".", internal_separator_enabled: bool = True
) -> str:
    """Checkpoints topic name on the target, e.g. `A.checkpoints.internal`."""
    sep = _internal_separator(separator, internal_separator_enabled)
    return f"{source_alias}{sep}checkpoints{sep}internal"


class ReplicationPolicy(Protocol):
    """Which topics are remote (replicated) topics, and what MM2's own topics are called."""

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        """Name on the target of `topic` replicated from cluster `source_alias`."""
        ...

    def topic_source(self, topic: str) -> str | None:
        """Alias of the cluster `topic` was replicated from, or None if it is not a remote topic."""
        ...

    def upstream_topic(self, topic: str) -> str | None:
        """Name of `topic` one hop upstream (possibly remote itself), or None if it is not a remote topic."""
        ...

    def original_topic(self, topic: str) -> str:
        """Name of `topic` on the cluster it was first written to, across all hops; `topic` if not remote."""
        ...

    def heartbeats_topic(self) -> str:
        """Name of the heartbeats topic."""
        ...

    def offset_syncs_topic(self, cluster_alias: str) -> str:
        """Name of the offset-syncs topic named for `cluster_alias`."""
        ...

    def checkpoints_topic(self, cluster_alias: str) -> str:
        """Name of the checkpoints topic holding checkpoints of groups on `cluster_alias`."""
        ...

    def is_heartbeats_topic(self, topic: str) -> bool:
        """True if `topic` is a heartbeats topic or a (multi-hop) replica of one."""
        ...

    def is_checkpoints_topic(self, topic: str) -> bool:
        """True if `topic` is a checkpoints topic."""
        ...

    def is_mm2_internal_topic(self, topic: str) -> bool:
        """True if `topic` is one of MM2's internal topics (offset syncs, checkpoints, Connect state)."""
        ...

    def is_internal_topic(self, topic: str) -> bool:
        """True if `topic` is internal to Kafka, Connect or MM2 and must never be replicated."""
        ...


class DefaultReplicationPolicy:
    """Prefixes the source alias: `orders` from cluster `A` becomes `A.orders`."""

    __slots__ = ("_internal_separator_enabled", "_isep", "_separator")

    def __init__(self, separator: str = ".", internal_separator_enabled: bool = True) -> None:
        if not separator:
            raise ValueError("replication policy separator must be a non-empty string")
        self._separator = separator
        self._internal_separator_enabled = internal_separator_enabled
        # KIP-949: with the internal separator disabled, MM2's internal topics keep "." (pre-3.1 names).
        self._isep = separator if internal_separator_enabled else "."

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(separator={self._separator!r}, "
            f"internal_separator_enabled={self._internal_separator_enabled})"
        )

    @property
    def separator(self) -> str:
        return self._separator

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        return f"{source_alias}{self._separator}{topic}"

    def topic_source(self, topic: str) -> str | None:
        parts = topic.split(self._separator)
        # Java's String.split drops trailing empty strings, so `a.` (and `a..`) has a single part: not remote.
        while parts and not parts[-1]:
            parts.pop()
        return parts[0] if len(parts) >= 2 else None

    def upstream_topic(self, topic: str) -> str | None:
        source = self.topic_source(topic)
        if source is None:
            return None
        return topic[len(source) + len(self._separator) :]

    def original_topic(self, topic: str) -> str:
        # Stop at a fixed point too: the identity policy's upstream of a topic is the topic itself.
        while True:
            upstream = self.upstream_topic(topic)
            if upstream is None or upstream == topic:
                return topic
            topic = upstream

    def heartbeats_topic(self) -> str:
        return HEARTBEATS_TOPIC

    def offset_syncs_topic(self, cluster_alias: str) -> str:
        return offset_syncs_topic(cluster_alias, self._separator, self._internal_separator_enabled)

    def checkpoints_topic(self, cluster_alias: str) -> str:
        return checkpoints_topic(cluster_alias, self._separator, self._internal_separator_enabled)

    def is_heartbeats_topic(self, topic: str) -> bool:
        return self.original_topic(topic) == self.heartbeats_topic()

    def is_checkpoints_topic(self, topic: str) -> bool:
        return topic.endswith(f"{self._isep}checkpoints{self._isep}internal")

    def is_mm2_internal_topic(self, topic: str) -> bool:
        return topic.endswith(f"{self._isep}internal")

    def is_internal_topic(self, topic: str) -> bool:
        return (
            self.is_mm2_internal_topic(topic)
            or topic.startswith(("__", "."))
            or topic.endswith(("-internal", ".internal"))
        )


class IdentityReplicationPolicy(DefaultReplicationPolicy):
    """Keeps topic names, so every topic counts as remote from `source_alias` and cycles go undetected.

    Topics whose name ends with "heartbeats" (not only `heartbeats` itself) are still prefixed as under the
    default policy, e.g. `app-heartbeats` from `A` becomes `A.app-heartbeats`.
    """

    __slots__ = ("_source_alias",)

    def __init__(
        self, source_alias: str, separator: str = ".", internal_separator_enabled: bool = True
    ) -> None:
        super().__init__(separator, internal_separator_enabled)
        self._source_alias = source_alias

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(source_alias={self._source_alias!r}, separator={self.separator!r}, "
            f"internal_separator_enabled={self._internal_separator_enabled})"
        )

    @property
    def source_alias(self) -> str:
        return self._source_alias

    def _looks_like_heartbeat(self, topic: str) -> bool:
        # MM2 tests a suffix, not equality; kept for compatibility with MM2-named heartbeat replicas.
        return topic.endswith(self.heartbeats_topic())

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        if self._looks_like_heartbeat(topic):
            return super().format_remote_topic(source_alias, topic)
        return topic

    def topic_source(self, topic: str) -> str | None:
        if self._looks_like_heartbeat(topic):
            return super().topic_source(topic)
        return self._source_alias

    def upstream_topic(self, topic: str) -> str | None:
        if self._looks_like_heartbeat(topic):
            return super().upstream_topic(topic)
        return topic


def is_cycle(policy: ReplicationPolicy, topic: str, target_alias: str) -> bool:
    """True if `topic` already came from `target_alias` at some hop, so replicating it there would loop.

    As MM2's `MirrorSourceConnector.isCycle`. Under the identity policy only heartbeat topics can be cycles:
    any other topic's source is the flow's own source alias and its upstream is itself.
    """
    while True:
        source = policy.topic_source(topic)
        if source is None:
            return False
        if source == target_alias:
            return True
        upstream = policy.upstream_topic(topic)
        if upstream is None or upstream == topic:
            return False
        topic = upstream


_DEFAULT_NAMES = ("default", "org.apache.kafka.connect.mirror.DefaultReplicationPolicy")
_IDENTITY_NAMES = ("identity", "org.apache.kafka.connect.mirror.IdentityReplicationPolicy")


def make_policy(
    name: str, source_alias: str, separator: str = ".", internal_separator_enabled: bool = True
) -> ReplicationPolicy:
    """The policy called `name` (short name or MM2 class name) for a flow from `source_alias`."""
    if name in _DEFAULT_NAMES:
        return DefaultReplicationPolicy(separator, internal_separator_enabled)
    if name in _IDENTITY_NAMES:
        return IdentityReplicationPolicy(source_alias, separator, internal_separator_enabled)
    allowed = ", ".join(_DEFAULT_NAMES + _IDENTITY_NAMES)
    raise ValueError(f"unknown replication policy {name!r}; expected one of: {allowed}")
