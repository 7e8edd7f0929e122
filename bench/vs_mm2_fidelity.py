"""Part `fidelity` of vs_mm2.py: what the target holds after MM2, and after `mirror-engine prepare`, beside the source.

Each contender gets a fresh secured pair (SASL, ACLs enforced), so neither sees the other's work, and the same
source: topics with non-default configs and ACLs of every kind (literal and prefixed, ALLOW and DENY, topic,
group and cluster). MM2 runs (as the super user, MM2's default intervals: it syncs topic ACLs and configs at
start) until the target stops changing; the engine runs its prepare stage once. Then partitions, replication
factors, topic-level configs and every ACL of both targets are compared with the source's.
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic
from harness import EngineProcess, print_table, stop_clusters, wait_for_group_coordinator, write_plan

from kafka_local.cluster import KafkaCluster, start_pair
from kafka_local.mm2 import MirrorMakerSettings, start_mirror_maker
from mirror_engine.kafka import (
    Acl,
    create_acls,
    describe_topic_configs,
    list_topic_metadata,
    read_acls,
    topic_overrides,
    wait_until_served,
)

# name -> (partitions, topic configs); every config differs from the broker default.
TOPICS: dict[str, tuple[int, dict[str, str]]] = {
    "orders": (6, {"retention.ms": "3600000", "max.message.bytes": "2097152", "min.insync.replicas": "2",
                   "message.timestamp.type": "LogAppendTime", "compression.type": "zstd"}),
    "ledger": (3, {"cleanup.policy": "compact", "min.compaction.lag.ms": "60000", "segment.bytes": "10485760",
                   "delete.retention.ms": "3600000"}),
    "audit": (2, {"retention.bytes": "1073741824", "unclean.leader.election.enable": "true",
                  "message.timestamp.after.max.ms": "3600000"}),
}
ACLS: list[Acl] = [
    Acl("TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW"),
    Acl("TOPIC", "orders", "LITERAL", "User:alice", "*", "WRITE", "ALLOW"),
    Acl("TOPIC", "orders", "LITERAL", "User:bob", "*", "READ", "DENY"),
    Acl("TOPIC", "audit", "LITERAL", "User:bob", "*", "ALL", "ALLOW"),
    Acl("TOPIC", "ledger", "LITERAL", "User:alice", "*", "DESCRIBE_CONFIGS", "ALLOW"),
    Acl("TOPIC", "led", "PREFIXED", "User:alice", "*", "READ", "ALLOW"),
    Acl("TOPIC", "*", "LITERAL", "User:carol", "*", "DESCRIBE", "ALLOW"),
    Acl("GROUP", "billing", "LITERAL", "User:alice", "*", "READ", "ALLOW"),
    Acl("BROKER", "kafka-cluster", "LITERAL", "User:alice", "*", "IDEMPOTENT_WRITE", "ALLOW"),
]
SETTLED_S = 8.0  # MM2 is done once the target did not change for this long (its next syncs: 600 s later)
ABSENT = "-"


def _seed(source: KafkaCluster) -> None:
    admin = AdminClient(source.client_config())
    topics = [NewTopic(name, partitions, 1, config=configs) for name, (partitions, configs) in TOPICS.items()]
    for future in admin.create_topics(topics).values():
        future.result()
    wait_until_served(admin, list(TOPICS))
    create_acls(admin, ACLS)
    deadline = time.monotonic() + 30
    while not set(ACLS) <= (read_acls(admin) or frozenset()):  # the authorizer applies new ACLs a moment later
        if time.monotonic() > deadline:
            raise TimeoutError("the source's ACLs did not become visible within 30 s")
        time.sleep(0.3)


def snapshot(cluster: KafkaCluster) -> dict[str, str]:
    """What a cluster holds of TOPICS: partitions, replication factor, topic-level configs, and every ACL."""
    admin = AdminClient(cluster.client_config())
    _brokers, metadata = list_topic_metadata(admin)
    present = [name for name in TOPICS if name in metadata]
    state: dict[str, str] = {}
    for name in present:
        partitions, factor, _ = metadata[name]
        state[f"{name}: partitions"] = str(partitions)
        state[f"{name}: replication factor"] = str(factor)
    for name, entries in describe_topic_configs(admin, present).items():
        for key, value in topic_overrides(entries).items():
            state[f"{name}: {key}"] = value
    for acl in read_acls(admin) or frozenset():
        state[f"ACL {acl.permission} {acl.principal} {acl.operation} on {acl.resource_type.lower()} "
              f"{acl.pattern.lower()} '{acl.name}'"] = "yes"
    return state


def _mm2_target(args: argparse.Namespace, workdir: Path, source: KafkaCluster,
                target: KafkaCluster) -> tuple[dict[str, str], float]:
    """The target once MM2 stopped changing it, and when it last did (seconds since launch)."""
    mm2 = start_mirror_maker(source, target, workdir / "fidelity-mm2", MirrorMakerSettings(
        topics=",".join(TOPICS), groups=".*", tasks_max=args.mm2_tasks))
    try:
        last, changed_at = snapshot(target), time.monotonic()
        deadline = time.monotonic() + 180
        while time.monotonic() - changed_at < SETTLED_S and time.monotonic() < deadline:
            time.sleep(1)
            mm2.check_alive()
            now = snapshot(target)
            if now != last:
                last, changed_at = now, time.monotonic()
        return last, changed_at - mm2.started_at
    finally:
        mm2.stop()


def _engine_target(workdir: Path, source: KafkaCluster, target: KafkaCluster) -> tuple[dict[str, str], float]:
    """The target after one `mirror-engine prepare`, and how long that took."""
    wait_for_group_coordinator(target)
    plan = write_plan(workdir / "fidelity-plan.yaml", source, target, name="vs-mm2-fidelity",
                      topics={"include": list(TOPICS)}, groups={"include": [".*"]})
    prepare = EngineProcess("prepare", plan, workdir / "fidelity-prepare.log")
    prepare.process.wait(timeout=300)
    took = time.monotonic() - prepare.started_at
    if prepare.process.returncode != 0:
        raise RuntimeError(f"mirror-engine prepare exited with {prepare.process.returncode}:\n"
                           f"{prepare.log_file.read_text(errors='replace')[-3000:]}")
    return snapshot(target), took


def _start_pairs(workdir: Path) -> list[tuple[KafkaCluster, KafkaCluster]]:
    """Two secured pairs, started at once (they only wait for their JVMs)."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = [pool.submit(start_pair, workdir / f"fidelity-{who}-clusters", True) for who in ("mm2", "engine")]
        wait(futures)
    if any(future.exception() for future in futures):
        for future in futures:
            if future.exception() is None:
                stop_clusters(future.result())
        raise next(future.exception() for future in futures if future.exception())  # type: ignore[misc]
    return [future.result() for future in futures]


def _cell(value: str | None, source: str | None) -> str:
    shown = value if value is not None else ABSENT
    return shown if value == source else f"{shown} *"


def run_fidelity(args: argparse.Namespace, workdir: Path) -> None:
    pairs = _start_pairs(workdir)
    try:
        for source, _target in pairs:
            _seed(source)
        source_state = snapshot(pairs[0][0])
        engine, engine_s = _engine_target(workdir, *pairs[1])
        mm2, mm2_s = _mm2_target(args, workdir, *pairs[0])
    finally:
        stop_clusters([cluster for pair in pairs for cluster in pair])
    source = source_state
    keys = sorted(set(source) | set(mm2) | set(engine), key=lambda k: (k.startswith("ACL"), k))
    rows = [[key, source.get(key, ABSENT), _cell(mm2.get(key), source.get(key)),
             _cell(engine.get(key), source.get(key))] for key in keys]
    differs = {who: sum(1 for key in keys if state.get(key) != source.get(key)) for who, state in
               (("MM2", mm2), ("engine", engine))}
    print_table(
        f"fidelity: {len(TOPICS)} topics and {len(ACLS)} ACLs on a secured source; target after MM2 (settled "
        f"{mm2_s:.0f} s after launch) and after `mirror-engine prepare` ({engine_s:.1f} s)",
        ["item", "source", "MM2", "engine"], rows,
        ["* differs from the source; - absent (a config at the broker's default, a missing ACL)",
         f"items differing: MM2 {differs['MM2']}, engine {differs['engine']} of {len(keys)}",
         "replication factor: one broker per cluster, so 1 everywhere (MM2 would create 2, its "
         "replication.factor default, which one broker refuses: it runs here with replication.factor=1)",
         "the engine's plan keeps MM2's default config exclusions (min.insync.replicas, message.timestamp.type, "
         "unclean.leader.election.enable, ...); plan field sync.config_exclude adds to them"])
