"""The secured pair enforces SASL authentication and ACLs."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

pytestmark = pytest.mark.integration


def _produce_one(config: dict[str, str], topic: str) -> KafkaError | None:
    """Produce one record and return the delivery error, if any."""
    errors: list[KafkaError | None] = []
    producer = Producer({**config, "message.timeout.ms": 8000})
    producer.produce(topic, value=b"x", on_delivery=lambda err, _msg: errors.append(err))
    producer.flush(15)
    assert errors, "no delivery report"
    return errors[0]


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_principal_denied_until_acl_then_allowed(secured_pair, unique_name, mechanism):
    source, _ = secured_pair
    admin = AdminClient(source.client_config())
    admin.create_topics([NewTopic(unique_name, 1, 1)])[unique_name].result()
    alice = source.client_config("alice", mechanism=mechanism)

    denied = _produce_one(alice, unique_name)
    assert denied is not None and denied.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED

    acl = AclBinding(ResourceType.TOPIC, unique_name, ResourcePatternType.LITERAL, "User:alice", "*",
                     AclOperation.WRITE, AclPermissionType.ALLOW)
    admin.create_acls([acl])[acl].result()
    # The broker's authorizer applies the new ACL from the metadata log shortly after the
    # controller commits it: allow a few seconds.
    deadline = time.monotonic() + 15
    while (error := _produce_one(alice, unique_name)) is not None and time.monotonic() < deadline:
        assert error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
        time.sleep(0.5)
    assert error is None


def test_wrong_password_is_rejected(secured_pair):
    source, _ = secured_pair
    config = {**source.client_config("alice"), "sasl.password": "wrong"}
    with pytest.raises(KafkaException):
        AdminClient(config).list_topics(timeout=5)
