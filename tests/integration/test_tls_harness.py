"""The harness's TLS clusters: each answers a client with the right credentials and refuses one without."""

from __future__ import annotations

import os
import stat

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

pytestmark = pytest.mark.integration

PAIRS = ["mtls_pair", "scram_ssl_pair", "oauth_pair"]


@pytest.mark.parametrize("pair", PAIRS)
def test_tls_cluster_serves_its_client(request, pair):
    source, target = request.getfixturevalue(pair)
    for cluster in (source, target):
        metadata = AdminClient({**cluster.client_config(), "log_level": "0"}).list_topics(timeout=15)
        assert metadata.brokers


@pytest.mark.parametrize("pair", PAIRS)
def test_tls_cluster_refuses_a_client_without_credentials(request, pair):
    source, _ = request.getfixturevalue(pair)
    bare = {"bootstrap.servers": source.bootstrap, "security.protocol": "SSL",
            "ssl.ca.location": str(source.tls_files.ca), "log_level": "0"}
    with pytest.raises(KafkaException):
        AdminClient(bare).list_topics(timeout=5)


def test_tls_material_is_owner_readable(mtls_pair):
    source, _ = mtls_pair
    folder = source.tls_files.folder
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for entry in folder.iterdir():
        assert stat.S_IMODE(os.stat(entry).st_mode) & 0o077 == 0, entry.name
