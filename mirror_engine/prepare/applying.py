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

from mirror_engine.kafka import Acl, admin_client, read_acls, wait_until_served
from mirror_engine.prepare.actions import Action, ApplyResult


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
        futures = admin.create_topics(new_topics, request_timeout=timeout_s, validate_only=validate_only)
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
        futures = admin.create_partitions(
            [NewPartitions(a.resource, a.details["to"]) for a in grows],
            request_timeout=timeout_s, validate_only=validate_only,
        )
        for action in grows:
            settle(action, futures[action.resource])
    for action in by_kind.get("alter_configs", []):
        entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
                   for k, v in action.details["set"].items()]
        entries += [ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE)
                    for k in action.details["delete"]]
        resource = ConfigResource(ConfigResource.Type.TOPIC, action.resource, incremental_configs=entries)
        futures = admin.incremental_alter_configs([resource], request_timeout=timeout_s, validate_only=validate_only)
        settle(action, next(iter(futures.values())))
    acl_actions = by_kind.get("create_acl", [])
    if acl_actions and validate_only:
        result.not_attempted.extend(acl_actions)
    elif acl_actions:
        bindings = {Acl(**a.details["acl"]).to_binding(): a for a in acl_actions}
        futures = admin.create_acls(list(bindings), request_timeout=timeout_s)
        for binding, future in futures.items():
            settle(bindings[binding], future)
        _wait_for_acls(admin, {Acl(**a.details["acl"]) for a in result.applied if a.kind == "create_acl"})

    if not validate_only and (creates or grows or internal):
        changed = [a.resource for a in result.applied if a.kind in ("create_topic", "add_partitions")]
        wait_until_served(admin, [*result.internal_topics, *changed])
    return result


def _wait_for_acls(admin: AdminClient, created: set[Acl], timeout_s: float = 15.0) -> None:
    """The authorizer applies new ACLs from the metadata log a moment after creation; wait for that."""
    deadline = time.monotonic() + timeout_s
    while created and time.monotonic() < deadline:
        if created <= (read_acls(admin) or frozenset()):
            return
        time.sleep(0.2)
