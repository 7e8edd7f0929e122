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

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from live_traffic import LiveTraffic  # demo/live_traffic.py, beside this script
from quiet import Quiet  # demo/quiet.py, beside this script

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


def live_traffic(source: KafkaCluster, seconds: float) -> LiveTraffic:
    """The shop's applications on the source: billing and shipping consume for half of `seconds`, then stop (as a
    team stops them for the switch); the producer writes for all of it, then stops (the producer switch waits)."""
    traffic = LiveTraffic(source).start()
    threading.Timer(seconds / 2, traffic.stop_consumers).start()
    threading.Timer(seconds, traffic.stop_producer).start()
    return traffic


def run_step(title: str, command: list[str], env: dict[str, str], say=None, show: int = 0, head: int = 0) -> None:
    """Run a step: its whole output goes to stdout (the log), its title, first `head` and last `show` lines to
    `say`."""
    print(f"\n== {title}\n$ {' '.join(command)}", flush=True)
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    print(result.stdout + result.stderr, flush=True)
    if say is not None:
        lines = [line for line in result.stdout.splitlines() if line.strip()]
        say(f"== {title}" + "".join(f"\n   {line}" for line in lines[:head] + (lines[-show:] if show else [])))
    if result.returncode != 0:
        raise SystemExit(f"step failed: {title} (its output is in the log)")


def compare(source: KafkaCluster, target: KafkaCluster, say=print) -> bool:
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
    say(f"\n== partition check\n{'topic':<10} {'partition':>9} {'source':>8} {'target':>8}  result")
    for topic, partitions in DEMO_TOPICS.items():
        for partition in range(partitions):
            source_records, target_records = read(source, topic, partition), read(target, topic, partition)
            same = source_records == target_records
            clean &= same
            say(f"{topic:<10} {partition:>9} {len(source_records):>8} {len(target_records):>8}  "
                f"{'identical' if same else 'DIFFERENT'}")
    return clean


def main() -> int:
    log_path = ROOT / "reports" / "demo.log"
    quiet = Quiet(log_path)
    say = quiet.say
    outcome = 1
    try:
        with tempfile.TemporaryDirectory(prefix="kafka-migration-demo-") as workdir:
            say("starting local source and target clusters ...")
            started = time.monotonic()
            source, target = start_pair(Path(workdir))
            try:
                say(f"  source {source.bootstrap}, target {target.bootstrap} ({time.monotonic() - started:.1f} s)")
                counts = load_source(source)
                say(f"loaded the source: {counts}")
                env = airflow_env(source, target)
                env["MIRROR_SOURCE_BOOTSTRAP"], env["MIRROR_TARGET_BOOTSTRAP"] = source.bootstrap, target.bootstrap
                bin_dir = Path(sys.executable).parent
                run_step("Airflow reaches both clusters",
                         [str(bin_dir / "airflow"), "dags", "test", "kafka_cluster_smoke"], env)
                say("Airflow reaches both clusters")
                traffic = live_traffic(source, seconds=40)
                say("the migration DAG (dag.test()), while producers and consumers run on the source; stages:")
                outcome = migrate(env, source, target, traffic, say)
            finally:
                source.stop()
                target.stop()
    finally:
        quiet.close()
        say(f"\nthe full log (Spark plans, Airflow task logs, client lines): {log_path}")
        say("the same migration in the Airflow UI and the cockpit: make demo-ui (README: Airflow by hand)")
        say("demo finished: every record copied in order, both groups switched exactly, producers switched."
            if outcome == 0 else "demo FAILED: see the lines above and the full log.")
    return outcome


def migrate(env: dict[str, str], source: KafkaCluster, target: KafkaCluster, traffic: LiveTraffic,
            say) -> int:
    """The DAG run, its stages printed as they end, then the validation, the groups' offsets and the check."""
    os.environ.update(env)  # connections for Airflow, in this process
    from airflow.dag_processing.dagbag import DagBag

    from mirror_engine.kafka import committed_offsets

    dag = DagBag(dag_folder=str(ROOT / "dags")).get_dag("kafka_migration__demo")
    watcher = StageWatcher(dag.dag_id, say)
    watcher.start()
    try:
        run = dag.test(run_conf={"producer_topics": ["orders", "payments"]})
    finally:
        watcher.stop()
    traffic.stop()
    watcher.report(run.get_task_instances())
    if str(run.state) != "success":
        say(f"the migration DAG ended {run.state}")
        return 1
    reports = sorted((Path(env.get("AIRFLOW_HOME", ".")) / "reports").glob("validation-demo-*.json"))
    if reports:
        report = json.loads(reports[-1].read_text())
        say(f"\n== validation: {'clean' if report['clean'] else 'NOT CLEAN'} {report['totals']}")
        say(f"   page: {reports[-1].with_suffix('.html')}")
    target_admin = AdminClient(target.client_config())
    say("\n== the groups' offsets on the target")
    for group in ("billing", "shipping"):
        say(f"{group}: {dict(sorted(committed_offsets(target_admin, group).items()))}")
    return 0 if compare(source, target, say) else 1


class StageWatcher(threading.Thread):
    """Prints each task of the newest run of the DAG as it ends (read from Airflow's database every 2 s)."""

    def __init__(self, dag_id: str, say) -> None:
        super().__init__(daemon=True)
        self.dag_id, self.say, self.halt, self.shown = dag_id, say, threading.Event(), set()
        self.started = time.monotonic()

    def run(self) -> None:
        while not self.halt.wait(2):
            try:
                self.report(self._task_instances())
            except Exception:  # the database is busy with the run: look again
                continue

    def _task_instances(self) -> list:
        from airflow.models import DagRun, TaskInstance
        from airflow.utils.session import create_session

        with create_session() as session:
            run = session.query(DagRun).filter(DagRun.dag_id == self.dag_id).order_by(DagRun.id.desc()).first()
            if run is None:
                return []
            tis = session.query(TaskInstance).filter(TaskInstance.dag_id == self.dag_id,
                                                     TaskInstance.run_id == run.run_id).all()
            session.expunge_all()
            return tis

    def report(self, tis: list) -> None:
        ended = ("success", "failed", "skipped", "upstream_failed")
        for ti in sorted(tis, key=lambda ti: (ti.end_date is None, ti.end_date)):
            suffix = f"[{ti.rendered_map_index or ti.map_index}]" if ti.map_index >= 0 else ""
            key = (ti.task_id, ti.map_index)
            if str(ti.state) in ended and key not in self.shown:
                self.shown.add(key)
                self.say(f"  {ti.task_id + suffix:<32} {ti.state!s:<10} {time.monotonic() - self.started:6.0f} s")

    def stop(self) -> None:
        self.halt.set()
        self.join(10)


if __name__ == "__main__":
    sys.exit(main())
