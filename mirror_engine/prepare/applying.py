"""Applying a target's actions in order (topics, partitions, configs, ACLs), or having the target validate them
(a dry-run), each action's outcome reported."""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
)

from mirror_engine.kafka import Acl, admin_client, in_batches, read_acls, wait_until_served
from mirror_engine.prepare.actions import Action, ApplyResult

# The KRaft controller refuses a request that would write more than 10,000 metadata records at once ("Unable to
# perform excessively large batch operation"): a new topic writes one record, and one more per partition and per
# config; each new partition, changed config and ACL is one. So a plan of 1,000 topics of 10 partitions is created
# in three requests, not refused as one.
RECORDS_PER_REQUEST = 4_000

def apply_actions(
    target_config: dict[str, str], actions: list[Action], validate_only: bool = False, timeout_s: float = 30.0,
    internal_topics: dict[str, dict[str, str]] | None = None,
) -> ApplyResult:
    """Apply actions in order (topics, partitions, configs, ACLs); report each one's outcome.

    With `validate_only`, the broker checks topic, partition and config changes without making
    them (ACL creation has no such mode and is only listed). `internal_topics` (name -> configs, one partition
    each) are created first in the same request as the topics (one that exists already is fine: an engine may
    have just created it); one the target refuses is reported as a failed `create_topic`.
    """
    admin = admin_client(target_config)
    result = ApplyResult()
    by_kind: dict[str, list[Action]] = {}
    for action in actions:
        by_kind.setdefault(action.kind, []).append(action)

    def settle(action: Action, future: Any) -> None:
        try:
            future.result()
            result.applied.append(action)
        except KafkaException as error:
            result.failed.append((action, str(error.args[0].str() if error.args else error)))

    creates = by_kind.get("create_topic", [])
    internal = internal_topics or {}
    if creates or internal:
        new_topics = [NewTopic(name, 1, -1, config=configs) for name, configs in internal.items()] + [
            NewTopic(a.resource, a.details["partitions"], a.details["replication_factor"], config=a.details["configs"])
            for a in creates
        ]
        futures: dict[str, Any] = {}
        for batch in in_batches(new_topics, lambda t: 1 + t.num_partitions + len(t.config or {}), RECORDS_PER_REQUEST):
            futures.update(admin.create_topics(batch, request_timeout=timeout_s, validate_only=validate_only))
        for name, configs in internal.items():
            try:
                futures[name].result()
            except KafkaException as error:
                if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    details = {"partitions": 1, "replication_factor": -1, "configs": configs, "internal": True}
                    result.failed.append((Action("create_topic", name, details), str(error.args[0].str())))
                    continue
            result.internal_topics.append(name)
        for action in creates:
            settle(action, futures[action.resource])
    grows = by_kind.get("add_partitions", [])
    if grows:
        for batch in in_batches(grows, lambda a: a.details["to"] - a.details["from"], RECORDS_PER_REQUEST):
            futures = admin.create_partitions([NewPartitions(a.resource, a.details["to"]) for a in batch],
                                              request_timeout=timeout_s, validate_only=validate_only)
            for action in batch:
                settle(action, futures[action.resource])
    alters = by_kind.get("alter_configs", [])
    for batch in in_batches(alters, lambda a: len(a.details["set"]) + len(a.details["delete"]), RECORDS_PER_REQUEST):
        resources = {_config_change(action): action for action in batch}
        futures = admin.incremental_alter_configs(list(resources), request_timeout=timeout_s,
                                                  validate_only=validate_only)
        for resource, action in resources.items():
            settle(action, futures[resource])
    acl_actions = by_kind.get("create_acl", [])
    if acl_actions and validate_only:
        result.not_attempted.extend(acl_actions)
    elif acl_actions:
        for batch in in_batches(acl_actions, lambda _: 1, RECORDS_PER_REQUEST):
            bindings = {Acl(**a.details["acl"]).to_binding(): a for a in batch}
            futures = admin.create_acls(list(bindings), request_timeout=timeout_s)
            for binding, future in futures.items():
                settle(bindings[binding], future)
        _wait_for_acls(admin, {Acl(**a.details["acl"]) for a in result.applied if a.kind == "create_acl"})

    if not validate_only and (creates or grows or internal):
        changed = [a.resource for a in result.applied if a.kind in ("create_topic", "add_partitions")]
        wait_until_served(admin, [*result.internal_topics, *changed])
    return result


def _config_change(action: Action) -> ConfigResource:
    entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in action.details["set"].items()]
    entries += [ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE) for k in action.details["delete"]]
    return ConfigResource(ConfigResource.Type.TOPIC, action.resource, incremental_configs=entries)


def _wait_for_acls(admin: AdminClient, created: set[Acl], timeout_s: float = 15.0) -> None:
    """The authorizer applies new ACLs from the metadata log a moment after creation; wait for that."""
    deadline = time.monotonic() + timeout_s
    while created and time.monotonic() < deadline:
        if created <= (read_acls(admin) or frozenset()):
            return
        time.sleep(0.2)
