"""The demo migration on two local clusters, run by the migration DAG.

Starts a source and a target cluster on loopback, loads a realistic data set into the source (keyed
topics with headers, a compacted one), starts live traffic (a producer still writing orders and
payments, and two consumer groups, billing and shipping, part-way through and still consuming), and
runs the whole migration DAG of `migrations/demo.yaml` with `airflow dags test`: preflight, prepare,
the engine, the Spark validation, checkpoints, the exact switch of both groups and the switch of the
producers. Then it prints the validation report and the switch reports, and checks partition by
partition that the target holds exactly the source's records.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer
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
    env["AIRFLOW_CONN_SPARK_LOCAL"] = json.dumps({"conn_type": "spark", "host": "local[2]"})
    return env


def live_traffic(source: KafkaCluster, seconds: float) -> list[threading.Thread]:
    """A producer still writing orders and payments; billing and shipping still consuming, slowly."""
    def produce() -> None:
        producer = Producer({**source.client_config(), "linger.ms": 5})
        deadline, i = time.monotonic() + seconds, 0
        while time.monotonic() < deadline:
            producer.produce(("orders", "payments")[i % 2], key=f"customer-{i % 997}",
                             value=json.dumps({"live": i}), headers=[("source", b"live")])
            i += 1
            if i % 20 == 0:
                producer.poll(0)
                time.sleep(0.1)
        producer.flush(30)

    def consume(group: str, topics: list[str]) -> None:
        consumer = Consumer({**source.client_config(), "group.id": group, "enable.auto.commit": False,
                             "auto.offset.reset": "earliest"})
        consumer.subscribe(topics)
        deadline = time.monotonic() + seconds / 2
        while time.monotonic() < deadline:
            if consumer.consume(200, timeout=0.5):
                consumer.commit(asynchronous=False)
            time.sleep(0.3)  # slower than the producer: the groups stay behind
        consumer.close()

    threads = [threading.Thread(target=produce),
               threading.Thread(target=consume, args=("billing", ["orders", "payments"])),
               threading.Thread(target=consume, args=("shipping", ["orders"]))]
    for thread in threads:
        thread.start()
    return threads


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
            traffic = live_traffic(source, seconds=40)
            print("\n== the migration DAG (dag.test()), while producers and consumers run on the source", flush=True)
            os.environ.update(env)  # connections for Airflow, in this process
            from airflow.dag_processing.dagbag import DagBag

            dag = DagBag(dag_folder=str(ROOT / "dags")).get_dag("kafka_migration__demo")
            run = dag.test(run_conf={"producer_topics": ["orders", "payments"]})
            for thread in traffic:
                thread.join()
            print("\n== stages")
            for ti in sorted(run.get_task_instances(), key=lambda ti: (ti.start_date is None, ti.start_date)):
                suffix = f"[{ti.map_index}]" if ti.map_index >= 0 else ""
                print(f"  {ti.task_id + suffix:<32} {ti.state}")
            if str(run.state) != "success":
                raise SystemExit(f"the migration DAG ended {run.state}")
            reports = sorted((Path(env.get("AIRFLOW_HOME", ".")) / "reports").glob("validation-demo-*.json"))
            if reports:
                report = json.loads(reports[-1].read_text())
                print(f"\n== validation: {'clean' if report['clean'] else 'NOT CLEAN'} {report['totals']}")
                print(f"   page: {reports[-1].with_suffix('.html')}")
            target_admin = AdminClient(target.client_config())
            from mirror_engine.groups import committed_offsets

            for group in ("billing", "shipping"):
                print(f"== {group} on the target: {dict(sorted(committed_offsets(target_admin, group).items()))}")
            if not compare(source, target):
                print("the target differs from the source", file=sys.stderr)
                return 1
            print("\ndemo finished: every record copied in order, both groups switched exactly, producers switched.")
            return 0
        finally:
            source.stop()
            target.stop()


if __name__ == "__main__":
    sys.exit(main())
