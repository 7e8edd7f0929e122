"""Where a flow with no progress starts each partition: `engine.start_from` earliest, latest or a time, asked of
the source for every partition at once."""

from __future__ import annotations

import datetime
import time

import pytest
from confluent_kafka.admin import NewTopic

from mirror_engine.replication import Replicator
from tests.integration.kafka_data import produce, read_partition
from tests.integration.plans import create_topics, make_plan

pytestmark = pytest.mark.integration

BASE_TS = int(time.time() * 1000) - 600_000
PARTITIONS = 3


def _copied_numbers(source, target, topic: str, start_from: object, name: str) -> list[list[int]]:
    plan = make_plan(source, target, topic, name=name, engine={"start_from": start_from})
    Replicator(plan, source.client_config(), target.client_config()).run(max_seconds=60, until_caught_up=True)
    remote = plan.policy().format_remote_topic(plan.source.alias, topic)
    return [[int(r.key.decode()[1:]) for r in read_partition(target, remote, p)] for p in range(PARTITIONS)]


@pytest.mark.parametrize("start_from", ["earliest", "latest", "time"])
def test_a_new_flow_starts_every_partition_where_the_plan_says(kafka_pair, unique_name, start_from):
    source, target = kafka_pair
    topic = unique_name
    create_topics(source, [NewTopic(topic, PARTITIONS, 1)])
    # Partition p holds records 0..9 stamped BASE_TS + 1000 * i, but partition 2 holds only records before the time.
    produce(source, topic, [(p, f"k{i}".encode(), b"v", [], BASE_TS + 1000 * i)
                            for p in range(PARTITIONS) for i in range(10 if p < 2 else 4)])
    at = datetime.datetime.fromtimestamp((BASE_TS + 6000) / 1000, tz=datetime.UTC)
    copied = _copied_numbers(source, target, topic, at if start_from == "time" else start_from,
                             f"start-{start_from}-{unique_name[-8:]}")
    expected = {"earliest": [list(range(10)), list(range(10)), list(range(4))],
                "latest": [[], [], []],
                "time": [list(range(6, 10)), list(range(6, 10)), []]}  # none at or after it: the partition's end
    assert copied == expected[start_from]
