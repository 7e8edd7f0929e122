"""ACLs of a migration: read from a cluster, translated for the target, created there.

Unlike MirrorMaker 2 (which copies only literal topic ACLs, drops ALLOW WRITE and downgrades ALL
to READ), a migration moves producers and consumers to the target, so every topic, group,
cluster and transactional-id ACL is copied with its operation and permission as they are:
topic names go through the replication policy, principals through the plan's map.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from mirror_engine.plan import MigrationPlan, map_principal

# Names of confluent-kafka's ResourceType: the cluster resource is BROKER there (CLUSTER in Kafka's own API).
SYNCED_RESOURCE_TYPES = ("TOPIC", "GROUP", "BROKER", "TRANSACTIONAL_ID")


@dataclass(frozen=True, order=True)
class Acl:
    """One ACL binding as plain strings, hashable, so sets of them can be compared."""

    resource_type: str  # TOPIC, GROUP, BROKER (the cluster), TRANSACTIONAL_ID
    name: str
    pattern: str  # LITERAL or PREFIXED
    principal: str
    host: str
    operation: str  # READ, WRITE, ALL, ...
    permission: str  # ALLOW or DENY

    @classmethod
    def from_binding(cls, binding: AclBinding) -> Acl:
        return cls(
            binding.restype.name, binding.name, binding.resource_pattern_type.name, binding.principal,
            binding.host, binding.operation.name, binding.permission_type.name,
        )

    def to_binding(self) -> AclBinding:
        return AclBinding(
            ResourceType[self.resource_type], self.name, ResourcePatternType[self.pattern], self.principal,
            self.host, AclOperation[self.operation], AclPermissionType[self.permission],
        )

    def describe(self) -> str:
        return (f"{self.permission} {self.principal} {self.operation} on {self.resource_type} "
                f"{self.pattern.lower()} '{self.name}' from {self.host}")

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


# A cutover fences a group or a topic on the source by denying everyone READ on the group (its consumers)
# or WRITE on the topic (its producers). Those fences belong to the source: carried to the target they
# would lock out the very clients that move there.
FENCE_PRINCIPAL = "User:*"


def group_fence(group: str) -> Acl:
    return Acl("GROUP", group, "LITERAL", FENCE_PRINCIPAL, "*", "READ", "DENY")


def topic_write_fence(topic: str) -> Acl:
    return Acl("TOPIC", topic, "LITERAL", FENCE_PRINCIPAL, "*", "WRITE", "DENY")


def is_fence(acl: Acl) -> bool:
    return acl in (group_fence(acl.name), topic_write_fence(acl.name))


def create_acls(admin: AdminClient, acls: list[Acl], timeout_s: float = 15.0) -> None:
    for binding, future in admin.create_acls([acl.to_binding() for acl in acls], request_timeout=timeout_s).items():
        try:
            future.result()
        except KafkaException as error:
            raise KafkaException(KafkaError(error.args[0].code(), f"creating ACL {Acl.from_binding(binding).describe()}"
                                                                  f" failed: {error.args[0].str()}")) from None


def delete_acls(admin: AdminClient, acls: list[Acl], timeout_s: float = 15.0) -> None:
    filters = [
        AclBindingFilter(ResourceType[a.resource_type], a.name, ResourcePatternType[a.pattern], a.principal, a.host,
                         AclOperation[a.operation], AclPermissionType[a.permission])
        for a in acls
    ]
    for future in admin.delete_acls(filters, request_timeout=timeout_s).values():
        future.result()


def translate_acl(acl: Acl, plan: MigrationPlan) -> Acl | None:
    """The target's ACL for a source ACL, or None when the plan does not carry it over."""
    if is_fence(acl):
        return None
    if acl.resource_type not in SYNCED_RESOURCE_TYPES or acl.pattern not in ("LITERAL", "PREFIXED"):
        return None
    principal = map_principal(acl.principal, plan.sync.principal_map)
    name = acl.name
    if acl.resource_type == "TOPIC":
        policy = plan.policy()
        if acl.pattern == "LITERAL" and name != "*":
            if not plan.replicates_topic(name):
                return None
            name = policy.format_remote_topic(plan.source.alias, name)
        elif acl.pattern == "PREFIXED":
            # Under the default policy every replicated topic is `<alias><sep><topic>`, so a
            # prefix on the source becomes the same prefix behind the alias on the target.
            name = policy.format_remote_topic(plan.source.alias, name)
    elif acl.resource_type == "GROUP" and acl.pattern == "LITERAL" and name != "*" \
            and not plan.accepts_group(name):
        return None
    return Acl(acl.resource_type, name, acl.pattern, principal, acl.host, acl.operation, acl.permission)


def desired_target_acls(source_acls: frozenset[Acl], plan: MigrationPlan) -> frozenset[Acl]:
    translated = (translate_acl(acl, plan) for acl in source_acls)
    return frozenset(acl for acl in translated if acl is not None)


def read_acls(admin: AdminClient, timeout_s: float = 15.0) -> frozenset[Acl] | None:
    """Every ACL of a cluster, or None when the cluster has no authorizer."""
    match_all = AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY
    )
    try:
        bindings = admin.describe_acls(match_all, request_timeout=timeout_s).result()
    except KafkaException as error:
        if error.args[0].code() == KafkaError.SECURITY_DISABLED:
            return None
        raise
    if not bindings:
        # A principal without DESCRIBE on the cluster gets an empty list, not an error: tell
        # "no ACLs" from "not allowed to see them", so ACL sync is never skipped silently.
        described = admin.describe_cluster(include_authorized_operations=True, request_timeout=timeout_s).result()
        operations = described.authorized_operations or []
        if AclOperation.DESCRIBE not in operations and AclOperation.ALL not in operations:
            raise KafkaException(KafkaError(KafkaError.CLUSTER_AUTHORIZATION_FAILED,
                                            "describing ACLs needs DESCRIBE on the cluster"))
    return frozenset(Acl.from_binding(binding) for binding in bindings)
