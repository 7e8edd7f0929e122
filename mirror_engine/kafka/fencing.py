"""Fences on the source cluster, and whether it can hold one at all.

A cutover fences a group (DENY READ for every principal) or a topic (DENY WRITE) on the source with ACLs, which
need an authorizer there. Many clusters have none (development, and many internal ones): a fence asked for on
such a source is refused before anything changes, with a sentence saying what to do; a rollback there has no
fence to remove and removes none. A rollback needs nothing the switch did not: it removes a fence only where
one exists.
"""

from __future__ import annotations

import logging

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AclBindingFilter, AdminClient, ConfigResource, ResourceType

from mirror_engine.kafka.acls import Acl, create_acls, delete_acls
from mirror_engine.kafka.clusters import cluster_identity

__all__ = ["FENCE_OPTION", "fence_problem", "has_authorizer", "place_fence", "remove_fence"]

log = logging.getLogger(__name__)

FENCE_OPTION = "--fence"  # how a user asks for a fence on the command line; operators name their own switch
_AUTHORIZATION_FAILED = (KafkaError.CLUSTER_AUTHORIZATION_FAILED, KafkaError.TOPIC_AUTHORIZATION_FAILED,
                         KafkaError.GROUP_AUTHORIZATION_FAILED)


def _filter(acl: Acl) -> AclBindingFilter:
    binding = acl.to_binding()
    return AclBindingFilter(binding.restype, binding.name, binding.resource_pattern_type, binding.principal,
                            binding.host, binding.operation, binding.permission_type)


def _existing(admin: AdminClient, acl: Acl, timeout_s: float = 15.0) -> bool | None:
    """Whether `acl` is in force, on a cluster with an authorizer; None when the principal may not list ACLs
    (DESCRIBE on the cluster)."""
    try:
        return bool(admin.describe_acls(_filter(acl), request_timeout=timeout_s).result())
    except KafkaException as error:
        if error.args[0].code() in _AUTHORIZATION_FAILED:
            return None
        raise


def has_authorizer(admin: AdminClient, timeout_s: float = 15.0) -> bool:
    """The cluster runs an authorizer: a broker's `authorizer.class.name` is set. (Without one, DescribeAcls
    answers an empty list, not an error: only the broker's config tells.) A principal refused the broker's
    configs is refused by an authorizer."""
    _cluster_id, brokers = cluster_identity(admin, timeout_s)
    resource = ConfigResource(ResourceType.BROKER, str(min(brokers)))
    try:
        configs = admin.describe_configs([resource], request_timeout=timeout_s)[resource].result()
    except KafkaException as error:
        if error.args[0].code() in _AUTHORIZATION_FAILED:
            return True
        raise
    entry = configs.get("authorizer.class.name")
    return bool(entry is not None and entry.value)


def fence_problem(admin: AdminClient, alias: str, subject: str = "it", option: str = FENCE_OPTION) -> str:
    """A sentence when the source cannot hold a fence (no authorizer), else "". `subject` is what would be
    fenced (group 'billing'), `option` how the user asked for it (--fence, the run's fence, cutover.fence)."""
    if has_authorizer(admin):
        return ""
    return (f"the source '{alias}' has no authorizer, so {subject} cannot be fenced; switch without {option}, or "
            "enable an authorizer on the source (authorizer.class.name, e.g. "
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer)")


def place_fence(admin: AdminClient, acl: Acl, alias: str, subject: str, option: str = FENCE_OPTION) -> str:
    """Create the fence ACL; or, changing nothing, return the sentence saying why the source cannot hold it."""
    problem = fence_problem(admin, alias, subject, option)
    if not problem:
        create_acls(admin, [acl])
    return problem


def fences_in_force(admin: AdminClient, acls: list[Acl]) -> list[Acl]:
    """Those of the fence ACLs that exist (none on a cluster without an authorizer, nor for a principal that may not
    list ACLs)."""
    if not acls or not has_authorizer(admin):
        return []
    return [acl for acl in acls if _existing(admin, acl)]


def remove_fence(admin: AdminClient, acl: Acl) -> bool:
    """Remove the fence ACL where one is in force; True if one was removed. Nothing is asked of a source
    without an authorizer (no fence can exist there), nor of a principal that may not list ACLs when no fence
    is visible to it: only a fence that exists needs the right to delete it."""
    if not has_authorizer(admin):
        return False
    exists = _existing(admin, acl)
    if exists is False:
        return False
    try:
        delete_acls(admin, [acl])
    except KafkaException as error:
        if exists is None and error.args[0].code() in _AUTHORIZATION_FAILED:
            # Neither listing nor deleting ACLs is allowed: a fence this principal could not have placed.
            log.warning("cannot tell whether %s is in force on the source (the principal may not list or delete "
                        "ACLs); going on without removing it", acl.describe())
            return False
        raise
    return bool(exists)
