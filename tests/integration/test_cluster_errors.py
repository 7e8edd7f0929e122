"""What a user reads when a cluster does not let them in: the cause, not librdkafka's transport failure."""

from __future__ import annotations

import time

import pytest

from mirror_engine.kafka import ClusterUnreachable, describe_cluster

pytestmark = pytest.mark.integration


def _refusal(alias: str, config: dict[str, str]) -> tuple[str, float]:
    started = time.monotonic()
    with pytest.raises(ClusterUnreachable) as refused:
        describe_cluster(alias, config, timeout_s=10)
    return str(refused.value), time.monotonic() - started


def test_a_wrong_sasl_password_reads_as_failed_authentication_of_that_user(secured_pair):
    _source, target = secured_pair
    config = {**target.client_config("alice"), "sasl.password": "not-alice-secret"}
    message, seconds = _refusal("tgt", config)
    print(message)
    assert "authentication failed for user 'alice' on cluster 'tgt'" in message, message
    assert "transport failure" not in message.lower()
    assert "not-alice-secret" not in message and "alice-secret" not in message
    assert seconds < 9, f"known at the first refusal, yet waited {seconds:.1f} s"


def test_a_wrong_scram_password_reads_the_same(secured_pair):
    _source, target = secured_pair
    config = {**target.client_config("bob", mechanism="SCRAM-SHA-512"), "sasl.password": "wrong"}
    message, _seconds = _refusal("tgt", config)
    assert "authentication failed for user 'bob' on cluster 'tgt'" in message, message


def test_sasl_against_a_plaintext_listener_says_the_listener_does_not_speak_sasl(kafka_pair):
    _source, target = kafka_pair
    config = {"bootstrap.servers": target.bootstrap, "security.protocol": "SASL_PLAINTEXT",
              "sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": "alice-secret"}
    message, _seconds = _refusal("tgt", config)
    print(message)
    assert f"the listener at {target.bootstrap} does not speak SASL (is it PLAINTEXT?): cluster 'tgt'" in message, \
        message
    assert "alice-secret" not in message
