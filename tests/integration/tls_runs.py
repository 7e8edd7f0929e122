"""Shared by the tests on TLS clusters: small data, end offsets, and the scan for secrets."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, TopicPartition

from kafka_local.cluster import SECURED_USERS, KafkaCluster
from kafka_local.tls import harness_secrets

NOW = int(time.time() * 1000)  # recent: older records would fall to the brokers' 7-day retention
RECORDS = 300
PARTITIONS = 2


def forbidden_strings(*clusters: KafkaCluster) -> list[str]:
    """The secrets no log, report or command line of a run may show: passwords, client secret, key material."""
    secrets = [*harness_secrets(), *(p for u, p in SECURED_USERS.items() if u != "reader")]
    for cluster in clusters:
        key_lines = cluster.tls_files.client_key.read_text().splitlines()
        secrets += [line for line in key_lines[1:-1] if len(line) > 40][:3]  # the encrypted key's body
    return secrets


def assert_no_secret(text: str, secrets: list[str], where: str) -> None:
    for secret in secrets:
        assert secret not in text, f"a test secret ({secret[:4]}...) appears in {where}"
    assert "eyJ" not in text, f"something like a JWT (an OAuth token) appears in {where}"


def ends(cluster: KafkaCluster, topic: str) -> list[int]:
    """Each partition's end offset (a TLS handshake on a busy machine can outlast a short timeout)."""
    consumer = Consumer({**cluster.client_config(), "group.id": "test-end-offsets"})
    try:
        return [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in range(PARTITIONS)]
    finally:
        consumer.close()


