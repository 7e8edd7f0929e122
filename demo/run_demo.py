"""The demo migration on two local clusters.

Starts a source and a target cluster on loopback, loads a small realistic data set into the
source, runs the pipeline's Airflow DAG against them with `airflow dags test`, prints what
happened and stops the clusters.

Stage reached so far: the cluster smoke DAG (Airflow reaches both clusters through its
connections). Later stages of the migration are added here as they land.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_local.cluster import KafkaCluster, start_pair

ROOT = Path(__file__).resolve().parent.parent
DEMO_TOPICS = {"orders": 6, "payments": 3, "customers": 2}


def load_source(source: KafkaCluster) -> dict[str, int]:
    """Create the demo topics on the source and write keyed records with headers."""
    admin = AdminClient(source.client_config())
    topics = [NewTopic(name, partitions, 1) for name, partitions in DEMO_TOPICS.items()]
    for future in admin.create_topics(topics).values():
        future.result()
    producer = Producer({**source.client_config(), "linger.ms": 20, "partitioner": "murmur2_random"})
    counts = dict.fromkeys(DEMO_TOPICS, 0)
    for i in range(30_000):
        topic = ("orders", "payments", "customers")[i % 3]
        producer.produce(topic, key=f"customer-{i % 997}", value=json.dumps({"n": i, "amount": i % 500}),
                         headers=[("source", b"demo")])
        counts[topic] += 1
        if i % 5000 == 0:
            producer.poll(0)
    producer.flush(30)
    return counts


def airflow_env(source: KafkaCluster, target: KafkaCluster) -> dict[str, str]:
    env = os.environ.copy()
    for conn_id, cluster in (("KAFKA_SOURCE", source), ("KAFKA_TARGET", target)):
        env[f"AIRFLOW_CONN_{conn_id}"] = json.dumps(
            {"conn_type": "kafka", "extra": {"bootstrap.servers": cluster.bootstrap}}
        )
    return env


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="kafka-migration-demo-") as workdir:
        print("starting local source and target clusters ...", flush=True)
        started = time.monotonic()
        source, target = start_pair(Path(workdir))
        try:
            print(f"  source {source.bootstrap}, target {target.bootstrap} ({time.monotonic() - started:.1f} s)")
            counts = load_source(source)
            print(f"loaded the source: {counts}")
            print("running the kafka_cluster_smoke DAG with `airflow dags test` ...", flush=True)
            result = subprocess.run(
                [str(Path(sys.executable).parent / "airflow"), "dags", "test", "kafka_cluster_smoke"],
                env=airflow_env(source, target), capture_output=True, text=True,
            )
            tail = "\n".join((result.stdout + result.stderr).splitlines()[-15:])
            print(tail)
            if result.returncode != 0:
                print("the DAG failed", file=sys.stderr)
                return 1
            print("demo finished: Airflow reached both clusters.")
            return 0
        finally:
            source.stop()
            target.stop()


if __name__ == "__main__":
    sys.exit(main())
