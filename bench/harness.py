"""What the benchmarks share: plan files for a pair of local clusters, the engine as a child process (and a command
launched and stopped by signal), topics and their end offsets, the group coordinator's readiness, stopping clusters,
and the tables they print. It imports no benchmark script, so
the scripts import it and never each other in a circle."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml
from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from kafka_local.cluster import KafkaCluster
from kafka_local.mm2 import ProcessUsage, exit_code, stop_process
from mirror_engine.kafka import wait_until_served
from mirror_engine.plan import plan_from_dict

ROOT = Path(__file__).resolve().parent.parent
PARTITIONS = 8
# Client settings both contenders get (MM2: `tgt.producer.*`, `src.consumer.*`; the engine: its plan and its
# built-in consumer settings, which these copy). MM2 keeps Connect's own producer defaults otherwise
# (no idempotence, one request in flight per connection).
MM2_PRODUCER = {"acks": "all", "compression.type": "lz4", "linger.ms": "20", "batch.size": "1048576"}
MM2_CONSUMER = {"max.partition.fetch.bytes": "8388608", "fetch.max.bytes": "67108864"}
ENGINE_SETTINGS = {"linger_ms": 20, "compression": "lz4", "producer_batch_bytes": 1_048_576}


def cluster_section(alias: str, cluster: KafkaCluster) -> dict[str, Any]:
    client = {k: v for k, v in cluster.client_config().items() if k != "bootstrap.servers"}
    return {"alias": alias, "bootstrap_servers": cluster.bootstrap, "client": client}


def write_plan(path: Path, source: KafkaCluster, target: KafkaCluster, **sections: Any) -> Path:
    """A plan file (validated first) with the aliases `source` and `target`: MM2 runs as src->tgt, so the two
    never share an internal topic (offset-syncs, checkpoints, progress are named after the source alias)."""
    data = {"source": cluster_section("source", source), "target": cluster_section("target", target), **sections}
    plan_from_dict(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


class EngineProcess:
    """`mirror-engine <command> --plan FILE` as a child process, its log in a file."""

    def __init__(self, command: str, plan_file: Path, log_file: Path, *args: str) -> None:
        self.log_file = log_file
        with open(log_file, "wb") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "mirror_engine.cli", command, "--plan", str(plan_file), *args],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=ROOT, start_new_session=True)
        self.started_at = time.monotonic()
        self.usage: ProcessUsage | None = None

    def check_alive(self) -> None:
        if self.usage is None and exit_code(self.process) is None:
            return
        code = self.stop().returncode
        tail = "\n".join(self.log_file.read_text(errors="replace").splitlines()[-30:])
        raise RuntimeError(f"the engine ({self.process.args[3]}) exited with {code}:\n{tail}")

    def stop(self) -> ProcessUsage:
        if self.usage is None:
            self.usage = stop_process(self.process, timeout_s=90)
        return self.usage


def wait_for_group_coordinator(cluster: KafkaCluster, timeout_s: float = 60.0) -> None:
    """Wait until the cluster's group coordinator answers offset fetches.

    While a fresh cluster loads `__consumer_offsets`, an admin ListConsumerGroupOffsets answered with
    NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS crashes the process inside librdkafka 2.16
    (rd_kafka_cgrp_op on an admin client, confluentinc/librdkafka#5040), so nothing may ask before it is
    ready. A consumer's committed() meets the same answers as plain exceptions.
    """
    consumer = Consumer({**cluster.client_config(), "group.id": "vs-mm2-coordinator-probe", "log_level": 0})
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            try:
                consumer.committed([TopicPartition("vs-mm2-coordinator-probe", 0)], timeout=5)
                return
            except KafkaException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
    finally:
        consumer.close()


def stop_clusters(clusters: Iterable[KafkaCluster]) -> None:
    """Stop clusters side by side (each takes a few seconds to shut down)."""
    with ThreadPoolExecutor() as pool:
        for future in [pool.submit(cluster.stop) for cluster in clusters]:
            future.result()


def create_topics(cluster: KafkaCluster, names: Iterable[str], partitions: int = PARTITIONS) -> None:
    admin = AdminClient(cluster.client_config())
    names = list(names)
    for future in admin.create_topics([NewTopic(name, partitions, 1) for name in names]).values():
        future.result()
    wait_until_served(admin, names)


def print_table(title: str, header: list[str], rows: list[list[str]], notes: Iterable[str] = ()) -> None:
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    print(f"\n{title}")
    for row in [header, *rows]:
        print("  ".join(str(cell).ljust(w) if i == 0 else str(cell).rjust(w)
                        for i, (cell, w) in enumerate(zip(row, widths, strict=True))).rstrip())
    for note in notes:
        print(f"  {note}")


def launch(command: list[str], env: dict[str, str], cwd: Path, stderr: Path) -> tuple[subprocess.Popen[bytes], float]:
    """Start a child (its output to `stderr`); the monotonic time just before the launch."""
    env = {**env, "STARTUP_TRACE_LAUNCHED_AT": repr(time.time())}
    started = time.monotonic()
    with open(stderr, "wb") as out:
        process = subprocess.Popen(command, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    return process, started


def stop(process: subprocess.Popen[bytes], timeout_s: float = 60.0) -> int:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        return process.wait(timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait()


class EndOffsets:
    """The sum of a topic's end offsets, asked with one client kept open."""

    def __init__(self, cluster: KafkaCluster) -> None:
        self.admin = AdminClient({**cluster.client_config(), "log_level": 0})

    def total(self, topic: str, partitions: int) -> int:
        """0 while the topic does not exist or its partitions have no leader yet (just created)."""
        if topic not in self.admin.list_topics(timeout=10).topics:
            return 0
        futures = self.admin.list_offsets({TopicPartition(topic, p): OffsetSpec.latest() for p in range(partitions)},
                                          request_timeout=10)
        try:
            return sum(future.result().offset for future in futures.values())
        except KafkaException:
            return 0

    def total_of(self, topics: list[str], partitions: int) -> int:
        """The sum over `topics` (each of `partitions` partitions) in one request; a topic not there yet, or a
        partition without a leader yet, counts 0."""
        listed = self.admin.list_topics(timeout=10).topics
        asked = {TopicPartition(topic, p): OffsetSpec.latest() for topic in topics if topic in listed
                 for p in range(partitions)}
        if not asked:
            return 0
        total = 0
        for future in self.admin.list_offsets(asked, request_timeout=10).values():
            with contextlib.suppress(KafkaException):
                total += future.result().offset
        return total

    def wait_beyond(self, topic: str, partitions: int, before: int, alive: Callable[[], bool],
                    timeout_s: float = 120.0) -> float:
        """Poll until the topic holds more than `before` records; the monotonic time it was seen."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.total(topic, partitions) > before:
                return time.monotonic()
            if not alive():
                raise RuntimeError("the engine exited before copying a record")
            time.sleep(0.01)
        raise TimeoutError(f"nothing new reached {topic} on the target within {timeout_s:.0f} s")
