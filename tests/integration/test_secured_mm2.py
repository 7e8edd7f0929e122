"""MirrorMaker 2 files for TLS clusters, as their users write them, run by `mirror-engine run --mm2-config`:
JKS truststore and keystore (client certificates), and OAUTHBEARER with client credentials against a real
OAuth 2 server."""

from __future__ import annotations

import subprocess
import sys

import pytest
from confluent_kafka.admin import NewTopic

from kafka_local.mm2 import MirrorMakerSettings, mm2_properties, render_properties
from tests.integration.kafka_data import produce
from tests.integration.plans import create_topics
from tests.integration.tls_runs import NOW, PARTITIONS, RECORDS, assert_no_secret, ends, forbidden_strings

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("pair", ["mtls_pair", "oauth_pair"])
def test_mm2_file_copies_between_tls_clusters(request, pair, unique_name, tmp_path):
    source, target = request.getfixturevalue(pair)
    topic = f"{unique_name}-mm2"
    create_topics(source, [NewTopic(topic, PARTITIONS, 1)])
    produce(source, topic, [(i % PARTITIONS, b"k", f"v{i}".encode(), None, NOW + i) for i in range(RECORDS)])
    properties = mm2_properties(source, target, MirrorMakerSettings(topics=topic, groups="none"))
    text = render_properties(properties)
    assert ("client.jks" in text) if pair == "mtls_pair" else ("OAuthBearerLoginCallbackHandler" in text)
    mm2_file = tmp_path / "mm2.properties"
    mm2_file.write_text(text)
    command = [sys.executable, "-m", "mirror_engine.cli", "run", "--mm2-config", str(mm2_file), "--until-caught-up",
               "--max-seconds", "120"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert ends(target, topic) == ends(source, topic) == [RECORDS // PARTITIONS] * PARTITIONS
    assert_no_secret(result.stdout + result.stderr, forbidden_strings(source, target), "the engine's output")
    assert_no_secret(" ".join(command), forbidden_strings(source, target), "the command line")
