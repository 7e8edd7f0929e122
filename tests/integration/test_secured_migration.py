"""A whole migration on each kind of TLS cluster: plan, prepare, run to a full copy, a checkpoint round, a
switch-group with its proof and the Spark validation job; then a scan of what these runs printed and logged
for the test passwords, tokens and key material."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_local.cluster import KafkaCluster
from mirror_engine.kafka import committed_offsets
from spark_jobs import validate
from tests.integration.kafka_data import produce
from tests.integration.plans import create_topics, plan_dict
from tests.integration.tls_runs import NOW, PARTITIONS, RECORDS, assert_no_secret, ends, forbidden_strings

pytestmark = pytest.mark.integration

def _seed(source: KafkaCluster, topic: str, group: str) -> None:
    create_topics(source, [NewTopic(topic, PARTITIONS, 1)])
    produce(source, topic, [(i % PARTITIONS, f"k{i}".encode(), f"v{i}".encode(), None, NOW + i)
                            for i in range(RECORDS)])
    consumer = Consumer({**source.client_config(), "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    read = 0
    while read < 20:
        message = consumer.poll(1.0)
        read += message is not None and message.error() is None
    consumer.commit(asynchronous=False)
    consumer.close()


@pytest.mark.parametrize("pair", ["mtls_pair", "scram_ssl_pair", "oauth_pair"])
def test_migration_on_tls_clusters_end_to_end(request, pair, spark, unique_name, tmp_path, capfd):
    source, target = request.getfixturevalue(pair)
    topic, group = f"{unique_name}-orders", f"{unique_name}-app"
    _seed(source, topic, group)
    plan_file = tmp_path / "plan.yaml"
    data = plan_dict(source, target, topic, groups={"include": [f"{unique_name}.*"]},
                     validation={"report_dir": str(tmp_path / "reports")})
    plan_file.write_text(yaml.safe_dump(data))
    outputs: list[str] = []
    commands: list[list[str]] = []

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "mirror_engine.cli", *args, "--plan", str(plan_file)]
        commands.append(command)
        result = subprocess.run(command, capture_output=True, text=True, timeout=300)
        outputs.append(result.stdout + result.stderr)
        assert result.returncode == 0, f"{args[0]}: {result.stderr[-2000:]}"
        return result

    cli("plan")
    cli("prepare")
    ran = cli("run", "--until-caught-up", "--max-seconds", "120")
    assert ends(target, topic) == ends(source, topic) == [RECORDS // PARTITIONS] * PARTITIONS, ran.stderr[-3000:]
    checkpointed = cli("checkpoint", "--once")
    line = next(json.loads(raw) for raw in checkpointed.stdout.splitlines() if group in raw)
    on_source = committed_offsets(AdminClient(source.client_config()), group)
    assert line["checkpoints"] == len(on_source), line
    switched = cli("switch-group", "--group", group, "--report", str(tmp_path / "switch.json"))
    assert f"group {group} switched src->tgt: verified" in switched.stdout

    capfd.readouterr()
    status = validate.main(["--plan", str(plan_file), "--report-dir", str(tmp_path / "reports")])
    printed = capfd.readouterr()
    assert status == 0, printed.err[-3000:]
    report = json.loads(next((tmp_path / "reports").glob("validation-*.json")).read_text())
    assert report["clean"] and report["totals"]["source_records"] == RECORDS, report["totals"]

    secrets = forbidden_strings(source, target)
    for text, where in [*((out, "the CLI's output") for out in outputs), (printed.out + printed.err, "Spark's log"),
                        *((p.read_text(), p.name) for p in (tmp_path / "reports").iterdir()),
                        (Path(source.log_file).read_text(), "the source broker's log"),
                        (Path(target.log_file).read_text(), "the target broker's log"),
                        (" ".join(" ".join(c) for c in commands), "the command lines")]:
        assert_no_secret(text, secrets, where)
    for cluster in (source, target):
        cmdline = Path(f"/proc/{cluster.pid}/cmdline").read_bytes().decode(errors="replace")
        assert_no_secret(cmdline, secrets, f"the {cluster.name} broker's command line")
