"""The MirrorMaker 2 runner of the local harness: a real MM2 copies records, then stops when told."""

from __future__ import annotations

import os
import re
import uuid

import pytest
from confluent_kafka.admin import NewTopic

from kafka_local.mm2 import MirrorMakerSettings, start_mirror_maker
from tests.integration.kafka_data import end_offsets, produce, read_partition
from tests.integration.plans import create_topics

pytestmark = pytest.mark.integration

PARTITIONS = 3
RECORDS = 300


def test_mirror_maker_copies_records_with_keys_headers_and_timestamps_then_stops(kafka_pair, unique_name, tmp_path):
    source, target = kafka_pair
    topic = unique_name
    create_topics(source, [NewTopic(topic, PARTITIONS, 1)])
    base_ms = 1_700_000_000_000
    records = [
        (i % PARTITIONS, f"key-{i}".encode(), f"value-{i}".encode() * (1 + i % 5),
         [("seq", str(i).encode()), ("kind", b"odd" if i % 2 else b"even")], base_ms + i)
        for i in range(RECORDS)
    ]
    produce(source, topic, records)
    # Aliases of their own: MM2's internal topics (offset-syncs, checkpoints, its Connect topics) are named
    # after them, and other tests on these clusters use the engine under the aliases src and tgt.
    alias = f"m{uuid.uuid4().hex[:6]}"
    settings = MirrorMakerSettings(topics=re.escape(topic), groups="none", source_alias=f"{alias}s",
                                   target_alias=f"{alias}t")
    mirror_maker = start_mirror_maker(source, target, tmp_path / "mm2", settings)
    try:
        mirror_maker.wait_until_copied([topic], RECORDS, timeout_s=120)
    finally:
        usage = mirror_maker.stop()

    assert not mirror_maker.is_running()
    with pytest.raises(ProcessLookupError):
        os.kill(mirror_maker.pid, 0)
    assert usage.cpu_s > 0 and usage.max_rss_bytes > 0
    assert sum(end_offsets(target, topic, PARTITIONS)) == RECORDS  # the identity name, no duplicates
    for partition in range(PARTITIONS):
        copied = [r.content() for r in read_partition(target, topic, partition)]
        original = [r.content() for r in read_partition(source, topic, partition)]
        assert copied == original, f"{topic}[{partition}] differs on the target"
