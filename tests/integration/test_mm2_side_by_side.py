"""One MirrorMaker 2 properties file, run by real MirrorMaker 2 and by `mirror-engine run --mm2-config`, side by side
on the same clusters: the same remote topics with the same configs, heartbeats, checkpoints and synced offsets of a
group committed on the source; MM2's own RemoteClusterUtils reads the engine's checkpoints and gets the exact
offsets (MM2's own are at most those).

The two files are rendered from the same settings and differ only in the source cluster's alias (MM2's default
replication policy names remote topics after it), so the two copies land side by side on the one target.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_local.mm2 import (
    MirrorMakerSettings,
    mm2_properties,
    render_properties,
    start_mirror_maker,
    wait_for_records,
)
from kafka_local.mm2_client import translate_offsets
from mirror_engine.flow import checkpoint_lease_group
from mirror_engine.kafka import commit_offsets, describe_topic_configs, read_to_end, topic_overrides
from mirror_engine.mm2 import Heartbeat, read_mm2_config
from mirror_engine.plan import HEARTBEATS_TOPIC
from tests.integration.kafka_data import produce
from tests.integration.plans import create_topics

pytestmark = pytest.mark.integration

T = TypeVar("T")
PARTITIONS = 3
PER_PARTITION = 100
# Non-default configs of the compacted source topic: both copies must carry them, but for min.insync.replicas,
# which MM2's default exclude list (the engine's too) keeps off the target.
CONFIGS = {"cleanup.policy": "compact", "min.compaction.lag.ms": "1000", "max.message.bytes": "2000000",
           "retention.ms": "86400000", "min.insync.replicas": "1"}
# Where the group stands on the source, per partition: mid-topic, near the start, at the end.
COMMITTED = {0: 57, 1: 3, 2: PER_PARTITION}


def _file_settings(source_alias: str, target_alias: str, topics: str, group: str) -> MirrorMakerSettings:
    """MM2's defaults but for checkpoint and group sync intervals a test can wait for, and MM2's default policy."""
    return MirrorMakerSettings(
        topics=topics, groups=re.escape(group), source_alias=source_alias, target_alias=target_alias,
        emit_checkpoints_interval_s=2, sync_group_offsets_interval_s=2,
        extra={"replication.policy.class": "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"})


def _wait(what: str, check: Callable[[], T | None], timeout_s: float, alive: Callable[[], None]) -> T:
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        alive()
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(0.5)


def _committed(config: dict[str, str], group: str, topics: list[str]) -> dict[tuple[str, int], int]:
    consumer = Consumer({**config, "group.id": group, "enable.auto.commit": False})
    try:
        asked = [TopicPartition(t, p) for t in topics for p in range(PARTITIONS)]
        return {(tp.topic, tp.partition): tp.offset for tp in consumer.committed(asked, timeout=10) if tp.offset >= 0}
    finally:
        consumer.close()


def _copies(admin: AdminClient, alias: str) -> dict[str, int]:
    """The remote topics of a flow on the target, by their source name: partition counts (its checkpoints topic,
    `<alias>.checkpoints.internal`, is no remote topic). Heartbeats topics other tests left on the shared source,
    `heartbeats` or a replica of one (`b.heartbeats` from an active/active flow), are left out: MM2 copies them by
    default, the engine only with engine.replicate_heartbeats."""
    return {name.removeprefix(f"{alias}."): len(meta.partitions)
            for name, meta in admin.list_topics(timeout=10).topics.items()
            if name.startswith(f"{alias}.") and not name.endswith(".internal")
            and name.rsplit(".", 1)[-1] != "heartbeats"}


def test_one_mm2_file_gives_the_same_effects_from_mirrormaker2_and_mirror_engine_run(kafka_pair, unique_name,
                                                                                     tmp_path: Path):
    source, target = kafka_pair
    plain, compacted = f"{unique_name}-plain", f"{unique_name}-compact"
    group = f"{unique_name}-billing"
    create_topics(source, [NewTopic(plain, PARTITIONS, 1), NewTopic(compacted, PARTITIONS, 1, config=CONFIGS)])
    now = int(time.time() * 1000)
    for topic in (plain, compacted):
        produce(source, topic, [(i % PARTITIONS, f"k{i}".encode(), f"v{i}".encode(), [("n", str(i).encode())],
                                 now + i) for i in range(PARTITIONS * PER_PARTITION)])
    commit_offsets(AdminClient(source.client_config()), group, {(plain, p): o for p, o in COMMITTED.items()})

    tag = uuid.uuid4().hex[:6]
    mm_alias, engine_alias, target_alias = f"mm{tag}", f"me{tag}", f"t{tag}"
    topics = f"{re.escape(unique_name)}-.*"
    engine_file = tmp_path / "mm2.properties"
    engine_file.write_text(render_properties(mm2_properties(
        source, target, _file_settings(engine_alias, target_alias, topics, group))))

    mirror_maker = start_mirror_maker(source, target, tmp_path / "mm2", _file_settings(
        mm_alias, target_alias, topics, group))
    engine_log = tmp_path / "engine.log"
    with engine_log.open("w") as log:
        engine = subprocess.Popen([sys.executable, "-m", "mirror_engine.cli", "run", "--mm2-config", str(engine_file)],
                                  stdout=subprocess.PIPE, stderr=log, text=True)

    def both_alive() -> None:
        assert engine.poll() is None, engine_log.read_text()[-3000:]
        mirror_maker.check_alive()

    target_admin = AdminClient(target.client_config())
    java_client = {"bootstrap.servers": target.bootstrap}
    try:
        # While `run` holds the flow's checkpoint lease, a separate `checkpoint` of the same file writes nothing.
        _wait("the engine to take the checkpoint lease",
              lambda: "taken by mirror-engine-run-" in engine_log.read_text(), 60, both_alive)
        separate = subprocess.Popen([sys.executable, "-m", "mirror_engine.cli", "checkpoint", "--mm2-config",
                                     str(engine_file), "--once"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True)
        for alias in (mm_alias, engine_alias):
            wait_for_records(target, [f"{alias}.{plain}", f"{alias}.{compacted}"], 2 * PARTITIONS * PER_PARTITION,
                             90, alive=both_alive)

        # Checkpoints, as MM2's own client reads them: the engine's are exact, MM2's at most that (its +1 rule).
        exact = {(f"{engine_alias}.{plain}", p): o for p, o in COMMITTED.items()}

        def translated() -> dict[str, dict[tuple[str, int], int]] | None:
            found = translate_offsets(java_client, [engine_alias, mm_alias], group)
            return found if found[engine_alias] == exact and len(found[mm_alias]) == PARTITIONS else None

        found = _wait("both flows' checkpoints, as MM2's client reads them", translated, 60, both_alive)
        by_engine, by_mm2 = found[engine_alias], found[mm_alias]
        assert by_engine == exact
        assert set(by_mm2) == {(f"{mm_alias}.{plain}", p) for p in range(PARTITIONS)}
        for partition, offset in COMMITTED.items():
            assert 0 <= by_mm2[(f"{mm_alias}.{plain}", partition)] <= offset
        assert sum(by_mm2.values()) < sum(COMMITTED.values()), "MM2 exact too: its +1 rule should lag here"

        # Group offset sync (sync.group.offsets.enabled): each wrote the group on the target for its own copy.
        synced = _wait("both to sync the group's offsets on the target", lambda: (
            found if len(found := _committed(target.client_config(), group, [f"{mm_alias}.{plain}",
                                                                              f"{engine_alias}.{plain}"]))
            == 2 * PARTITIONS else None), 60, both_alive)
        assert {key: offset for key, offset in synced.items() if key[0].startswith(engine_alias)} == exact
        assert {key: offset for key, offset in synced.items() if key[0].startswith(mm_alias)} == by_mm2

        # The same remote topics, partition counts and topic configs.
        assert _copies(target_admin, mm_alias) == _copies(target_admin, engine_alias) == {
            plain: PARTITIONS, compacted: PARTITIONS}
        configs = describe_topic_configs(target_admin, [f"{mm_alias}.{compacted}", f"{engine_alias}.{compacted}"])
        by_mm2_configs = topic_overrides(configs[f"{mm_alias}.{compacted}"])
        assert by_mm2_configs == topic_overrides(configs[f"{engine_alias}.{compacted}"])
        assert by_mm2_configs == {k: v for k, v in CONFIGS.items() if k != "min.insync.replicas"}

        # Heartbeats: both flows beat into the target's heartbeats topic.
        beats = {(b.source_alias, b.target_alias) for b in (
            Heartbeat.from_record(m.key(), m.value())
            for m in read_to_end(target.client_config(), HEARTBEATS_TOPIC))}
        assert {(mm_alias, target_alias), (engine_alias, target_alias)} <= beats

        _out, refused = separate.communicate(timeout=60)
        assert separate.returncode == 1, refused[-3000:]
        assert "'mirror-engine-run-" in refused and "this process wrote nothing" in refused, refused[-3000:]
    finally:
        if engine.poll() is None:
            engine.send_signal(signal.SIGTERM)
        engine.communicate(timeout=90)
        mirror_maker.stop()
    log_text = engine_log.read_text()
    assert engine.returncode == 0, log_text[-3000:]
    assert "checkpoint lease of plan" in log_text and "taken by mirror-engine-run-" in log_text
    # It left the lease group as it stopped: a standby would have taken over at once.
    lease = checkpoint_lease_group(read_mm2_config(engine_file).plan)
    assert not target_admin.describe_consumer_groups([lease])[lease].result().members
