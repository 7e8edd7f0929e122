"""The target's partitions are asked (of the admin, and of each record producer) only where they must be: not at the
engine's start for the topics its preparation just read unchanged (a fresh producer asks for a topic's metadata on
its own at its first record, and each ask of ours cost the whole target's metadata), but for a topic created or
grown since, and after the start, until each producer sees every partition it is about to write."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from mirror_engine.kafka import ClusterState, TopicState
from mirror_engine.plan import plan_from_dict
from mirror_engine.replication import EngineError
from mirror_engine.replication.testing import TOPICS_PER_PRODUCER, RecordProducers, TargetTopics

PLAN = plan_from_dict({
    "name": "shop",
    "source": {"alias": "src", "bootstrap_servers": "127.0.0.1:19092"},
    "target": {"alias": "tgt", "bootstrap_servers": "127.0.0.1:29092"},
    "topics": {"include": ["t.*"]},
    "replication_policy": {"type": "default"},  # target topics "src.<topic>"
})


class _Producer:
    """Answers metadata from `shown` ({target topic: partitions}) and counts the asks."""

    def __init__(self, shown: dict[str, int]) -> None:
        self.shown = shown
        self.asked: list[str | None] = []

    def list_topics(self, topic: str | None = None, timeout: float = 0) -> Any:
        self.asked.append(topic)
        names = [topic] if topic else list(self.shown)
        return SimpleNamespace(topics={name: SimpleNamespace(partitions=dict.fromkeys(range(self.shown[name])),
                                                             error=None)
                                       for name in names if name in self.shown})


def _targets(shown: dict[str, int], topics: int) -> tuple[TargetTopics, RecordProducers]:
    records = RecordProducers(_Producer(shown), {}, make=lambda _settings: _Producer(shown))  # type: ignore[arg-type]
    clients = SimpleNamespace(records=records, target_admin=_Producer(shown))
    targets = TargetTopics(PLAN, clients, lambda _limit, _topic: None)  # type: ignore[arg-type]
    targets.flow_topics = topics
    return targets, records


def _read(partitions: dict[str, int]) -> ClusterState:
    return ClusterState(3, {name: TopicState(name, count, 3) for name, count in partitions.items()})


def test_at_the_start_the_topics_the_preparation_read_are_not_asked_and_still_spread_over_producers():
    topics = 3 * TOPICS_PER_PRODUCER
    shown = {f"src.t{i}": 4 for i in range(topics)}
    targets, records = _targets(shown, topics)
    targets.starting_from(_read(shown))
    keys = [(f"t{i}", p) for i in range(topics) for p in range(4)]
    assert targets.existing(keys) == keys and targets.clients.target_admin.asked == []  # type: ignore[attr-defined]
    targets.producers_know(keys)
    assert len(records.all()) == 4 and all(records.of(name) is not records.main for name in shown)
    assert [producer.asked for producer in records.all()] == [[]] * 4  # type: ignore[attr-defined]


def test_a_topic_grown_or_made_since_the_start_read_is_asked_until_its_producer_sees_it():
    shown = {"src.t0": 4, "src.t1": 2, "src.t2": 3}
    targets, records = _targets(shown, 3)
    producer: _Producer = records.main  # type: ignore[assignment]
    targets.starting_from(_read({"src.t0": 4, "src.t1": 1}))  # t1 grew since, t2 was made since
    keys = [("t0", 3), ("t1", 1), ("t2", 2), ("t2", 3)]
    assert targets.existing(keys) == keys[:3]  # t2 has no fourth partition
    assert targets.clients.target_admin.asked == [None]  # type: ignore[attr-defined]
    targets.producers_know(keys[:3])
    assert producer.asked == [None]  # several topics: one request for all

    targets.starting_from(None)  # after the start: every topic about to be written is asked
    targets.producers_know([("t0", 3)])
    assert producer.asked == [None, "src.t0"]

    with pytest.raises(EngineError, match=r"does not show 5 partitions of src\.t0"):
        targets.producers_know([("t0", 4)], timeout_s=0.3)
