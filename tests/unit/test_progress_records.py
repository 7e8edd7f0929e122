"""The progress records the engine writes are built from byte formats (the engine writes one a second for every
partition that moved, and the key of every partition at its start): they must stay byte for byte the JSON of
MirrorMaker 2's Connect offsets shape that readers, MM2 among them, parse."""

from __future__ import annotations

import json

import pytest

from mirror_engine.flow import PartitionProgress, progress_key, progress_value
from mirror_engine.flow.testing import PROGRESS_NAME, parse_progress

# Names a topic or cluster alias may carry, and some JSON must escape.
NAMES = ["orders", "payments.v2-eu_1", 'a"quote', "back\\slash", "ümlaut", "snow\u2603man", "tab\tname"]


@pytest.mark.parametrize("topic", NAMES)
@pytest.mark.parametrize("cluster", ["src", "ß-cluster", 'c"1'])
def test_a_progress_key_is_the_json_of_mm2s_offsets_key(cluster: str, topic: str) -> None:
    for partition in (0, 7, 2**31 - 1):
        expected = json.dumps([PROGRESS_NAME, {"cluster": cluster, "partition": partition, "topic": topic}],
                              separators=(",", ":")).encode()
        assert progress_key(cluster, topic, partition) == expected


@pytest.mark.parametrize("topic_id", ["", "AAAAAAAAAAAAAAAAAAAAAA", 'odd"id'])
def test_a_progress_value_is_the_json_of_its_fields(topic_id: str) -> None:
    for position, target_position in ((0, 0), (1, 0), (10**15, 10**15 + 3)):
        expected = json.dumps({"offset": position - 1, "position": position, "target_position": target_position,
                               "topic_id": topic_id}).replace(", ", ",").replace(": ", ":").encode()
        assert progress_value(position, target_position, topic_id) == expected
        assert PartitionProgress("t", 0, position, target_position, topic_id).value() == expected


def test_a_progress_record_reads_back_as_written() -> None:
    for topic in NAMES:
        key, value = progress_key("src", topic, 3), progress_value(42, 40, "id-1")
        assert parse_progress(key, value) == ((topic, 3), PartitionProgress(topic, 3, 42, 40, "id-1"))
