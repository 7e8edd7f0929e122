"""The demo migration on two local clusters.

Starts a source and a target cluster on loopback, loads a small realistic data set into the
source (keyed topics, a compacted one, a consumer group part-way through), then runs the stages
that exist so far, each through the project's own entry points:
1. Airflow reaches both clusters through its connections (`airflow dags test kafka_cluster_smoke`);
2. `mirror-engine plan`: the target changes the plan needs, as a dry-run table;
3. `mirror-engine prepare`: topics, partitions and configs created on the target;
4. `mirror-engine run --until-caught-up`: the engine copies every record;
5. a check, partition by partition, that the target holds exactly the source's records.
The migration DAG (staged, with Spark backfill and validation and the group switch) is not built
yet; this demo grows with it.
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
PLAN = ROOT / "migrations" / "demo.yaml"


def load_source(source: KafkaCluster) -> dict[str, int]:
    """Create the demo topics on the source and write keyed records with headers."""
    admin = AdminClient(source.client_config())
    topics = [NewTopic(name, partitions, 1) for name, partitions in DEMO_TOPICS.items()]
    topics[-1] = NewTopic("customers", DEMO_TOPICS["customers"], 1, config={"cleanup.policy": "compact"})
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


def run_step(title: str, command: list[str], env: dict[str, str], tail: int = 25) -> None:
    print(f"\n== {title}\n$ {' '.join(command)}", flush=True)
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    lines = [line for line in (result.stdout + result.stderr).splitlines() if not line.startswith("%")]
    print("\n".join(lines[-tail:]))
    if result.returncode != 0:
        raise SystemExit(f"step failed: {title}")


def compare(source: KafkaCluster, target: KafkaCluster) -> bool:
    """Per partition: the same records (key, value, headers, timestamp) in the same order on both sides."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    def read(cluster: KafkaCluster, topic: str, partition: int) -> list[tuple]:
        consumer = Consumer({**cluster.client_config(), "group.id": "demo-check", "enable.partition.eof": True})
        consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
        records: list[tuple] = []
        while True:
            for message in consumer.consume(10_000, timeout=5):
                if message.error() is None:
                    records.append((message.key(), message.value(), message.headers(), message.timestamp()[1]))
                elif message.error().code() == KafkaError._PARTITION_EOF:
                    consumer.close()
                    return records

    clean = True
    print(f"\n== check\n{'topic':<10} {'partition':>9} {'source':>8} {'target':>8}  result")
    for topic, partitions in DEMO_TOPICS.items():
        for partition in range(partitions):
            source_records, target_records = read(source, topic, partition), read(target, topic, partition)
            same = source_records == target_records
            clean &= same
            print(f"{topic:<10} {partition:>9} {len(source_records):>8} {len(target_records):>8}  "
                  f"{'identical' if same else 'DIFFERENT'}")
    return clean


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="kafka-migration-demo-") as workdir:
        print("starting local source and target clusters ...", flush=True)
        started = time.monotonic()
        source, target = start_pair(Path(workdir))
        try:
            print(f"  source {source.bootstrap}, target {target.bootstrap} ({time.monotonic() - started:.1f} s)")
            counts = load_source(source)
            print(f"loaded the source: {counts}")
            env = airflow_env(source, target)
            env["MIRROR_SOURCE_BOOTSTRAP"], env["MIRROR_TARGET_BOOTSTRAP"] = source.bootstrap, target.bootstrap
            bin_dir = Path(sys.executable).parent
            run_step("Airflow reaches both clusters", [str(bin_dir / "airflow"), "dags", "test", "kafka_cluster_smoke"],
                     env, tail=3)
            engine = [str(bin_dir / "mirror-engine")]
            run_step("plan: what the target needs (dry-run)", [*engine, "plan", "--plan", str(PLAN)], env)
            run_step("prepare the target", [*engine, "prepare", "--plan", str(PLAN)], env, tail=6)
            run_step("copy with the engine", [*engine, "run", "--plan", str(PLAN), "--until-caught-up"], env, tail=4)
            if not compare(source, target):
                print("the target differs from the source", file=sys.stderr)
                return 1
            print("\ndemo finished: every record copied, partition for partition, in order.")
            return 0
        finally:
            source.stop()
            target.stop()


if __name__ == "__main__":
    sys.exit(main())
