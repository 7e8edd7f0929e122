"""No output of a secured migration holds a password: CLI output at DEBUG, reports, and the flow's topics."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
import yaml
from confluent_kafka import Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_local.cluster import SECURED_USERS, KafkaCluster
from tests.integration.kafka_data import produce
from tests.integration.plans import create_topics

pytestmark = pytest.mark.integration

PASSWORDS = sorted(SECURED_USERS.values())
CLI = [sys.executable, "-m", "mirror_engine.cli", "--log-level", "DEBUG"]


def _cluster(alias: str, cluster: KafkaCluster) -> dict:
    config = cluster.client_config("admin", mechanism="SCRAM-SHA-512")
    return {"alias": alias, "bootstrap_servers": cluster.bootstrap,
            "client": {k: v for k, v in config.items() if k != "bootstrap.servers"}}


def _cli(*args: str, timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout_s, env=env)


def _leaks(text: str | bytes) -> list[str]:
    data = text.encode() if isinstance(text, str) else text
    return [password for password in PASSWORDS if password.encode() in data]


def _every_record(cluster: KafkaCluster) -> bytes:
    """Keys, values and headers of every record of every topic on the cluster but Kafka's own."""
    admin = AdminClient(cluster.client_config())
    topics = admin.list_topics(timeout=10).topics
    partitions = [TopicPartition(name, p, 0) for name, meta in topics.items() if not name.startswith("__")
                  for p in meta.partitions]
    consumer = Consumer({**cluster.client_config(), "group.id": "secrets-reader", "enable.auto.commit": False,
                         "enable.partition.eof": True, "isolation.level": "read_uncommitted"})
    consumer.assign(partitions)
    remaining, chunks = {(tp.topic, tp.partition) for tp in partitions}, []
    deadline = time.monotonic() + 60
    while remaining and time.monotonic() < deadline:
        for message in consumer.consume(1000, timeout=0.5):
            if message.error() is not None:
                if message.error().code() == KafkaError._PARTITION_EOF:
                    remaining.discard((message.topic(), message.partition()))
                continue
            chunks += [message.key() or b"", message.value() or b""]
            chunks += [b"%s=%s" % (name.encode(), value or b"") for name, value in message.headers() or ()]
    consumer.close()
    assert not remaining, f"not read to the end: {sorted(remaining)[:5]}"
    return b"\n".join(chunks)


def test_a_secured_migration_through_the_cli_never_shows_a_password(secured_pair, unique_name, tmp_path):
    source, target = secured_pair
    topic, group = f"{unique_name}-orders", f"{unique_name}-billing"
    create_topics(source, [NewTopic(topic, 2, 1)])
    now_ms = int(time.time() * 1000)
    produce(source, topic, [(i % 2, f"k{i}".encode(), f"v{i}".encode(), [], now_ms) for i in range(50)])
    reader = Consumer({**source.client_config(), "group.id": group, "enable.auto.commit": False})
    reader.commit(offsets=[TopicPartition(topic, 0, 10), TopicPartition(topic, 1, 12)], asynchronous=False)
    reader.close()
    plan_file = tmp_path / "secured.yaml"
    plan_file.write_text(yaml.safe_dump({
        "name": unique_name, "source": _cluster("src", source), "target": _cluster("tgt", target),
        "topics": {"include": [f"{unique_name}.*"]}, "groups": {"include": [f"{unique_name}.*"]},
        "engine": {"status_interval_s": 0.5, "log_interval_s": 0.5},
        "cutover": {"groups": [group], "wait_timeout_s": 60},
    }))
    assert _leaks(plan_file.read_text()), "the plan holds the password the outputs must not show"
    report = tmp_path / "switch-report.json"
    plan = ["--plan", str(plan_file)]
    commands = [
        ["plan", *plan], ["prepare", *plan, "--dry-run"], ["prepare", *plan],
        ["run", *plan, "--until-caught-up", "--max-seconds", "60"], ["status", *plan], ["status", *plan, "--json"],
        ["checkpoint", *plan, "--once"], ["switch-group", *plan, "--group", group, "--report", str(report)],
    ]
    outputs = {}
    for command in commands:
        result = _cli(*command)
        outputs[command[0] + " " + " ".join(command[3:])] = result
        assert "Traceback" not in result.stderr, f"{command}: {result.stderr[-3000:]}"
        if command[0] in ("run", "switch-group", "prepare"):
            assert result.returncode == 0, f"{command}: {result.stdout[-2000:]} {result.stderr[-2000:]}"
        assert " DEBUG " in result.stderr, f"{command}: DEBUG logging was not on"

    leaks = {name: _leaks(result.stdout + result.stderr) for name, result in outputs.items()}
    assert not any(leaks.values()), {name: found for name, found in leaks.items() if found}
    assert report.exists() and not _leaks(report.read_bytes())
    assert not _leaks(_every_record(target)), "a record on the target holds a password"


@pytest.mark.parametrize("jaas", [
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="mirror" password="mirror-secret',
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="mirror" password="mirror-secret"',
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="mirror" password=mirror-secret;;',
    'PlainLoginModule username="mirror" password="mirror-secret";',
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="mirror" password "mirror-secret";',
])
def test_a_malformed_jaas_config_is_refused_without_echoing_its_password(jaas, tmp_path):
    properties = tmp_path / "mm2.properties"
    properties.write_text("\n".join([
        "clusters = src, tgt", "src.bootstrap.servers = 127.0.0.1:1", "tgt.bootstrap.servers = 127.0.0.1:2",
        "src->tgt.enabled = true", "src->tgt.topics = .*",
        "src.security.protocol = SASL_PLAINTEXT", "src.sasl.mechanism = PLAIN", f"src.sasl.jaas.config = {jaas}",
    ]) + "\n", encoding="latin-1")
    result = _cli("plan", "--mm2-config", str(properties), timeout_s=30)
    assert result.returncode != 0
    assert "sasl.jaas.config" in result.stderr, result.stderr
    assert not _leaks(result.stdout + result.stderr), result.stderr
