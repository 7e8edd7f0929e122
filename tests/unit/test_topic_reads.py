"""Reads of many topics or partitions hold a bounded share of the answer at a time: topic configs asked
CONFIG_BATCH topics a request and kept only where a reader looks, ListOffsets at most LIST_OFFSETS_IN_FLIGHT calls
out at once (each partition asked is a Python future until answered). The answers themselves are checked on real
brokers by the integration tests that read configs and offsets."""

from __future__ import annotations

from concurrent.futures import Future
from types import SimpleNamespace
from typing import Any

from confluent_kafka import TopicPartition
from confluent_kafka.admin import ConfigSource, OffsetSpec

from mirror_engine.kafka import describe_topic_configs, list_offsets
from mirror_engine.kafka.topics import CONFIG_BATCH, CONFIGS_READ_BY_NAME, LIST_OFFSETS_BATCH, LIST_OFFSETS_IN_FLIGHT


def _entry(name: str, value: str, source: ConfigSource) -> SimpleNamespace:
    return SimpleNamespace(name=name, value=value, source=source, is_read_only=False, is_sensitive=False)


class ConfigAdmin:
    """Answers describe_configs as a broker would: every config of every topic, most at Kafka's default."""

    def __init__(self) -> None:
        self.asked: list[int] = []  # topics per call

    def describe_configs(self, resources: list[Any], request_timeout: float) -> dict[Any, Future]:
        self.asked.append(len(resources))
        answers = {}
        for resource in resources:
            entries = {name: _entry(name, "1", ConfigSource.DEFAULT_CONFIG)
                       for name in ["retention.bytes", "segment.ms", *CONFIGS_READ_BY_NAME]}
            entries["retention.ms"] = _entry("retention.ms", "60000", ConfigSource.DYNAMIC_TOPIC_CONFIG)
            entries["min.insync.replicas"] = _entry("min.insync.replicas", "2", ConfigSource.STATIC_BROKER_CONFIG)
            future: Future = Future()
            future.set_result(entries)
            answers[resource] = future
        return answers


def test_topic_configs_asked_in_batches_and_kept_where_read():
    admin = ConfigAdmin()
    names = [f"t{i}" for i in range(2 * CONFIG_BATCH + 5)]
    entries = describe_topic_configs(admin, names)  # type: ignore[arg-type]
    assert admin.asked == [CONFIG_BATCH, CONFIG_BATCH, 5]
    assert sorted(entries) == sorted(names)
    for found in entries.values():
        # What is set somewhere, and the few read by name even at their default; no other default.
        assert {entry.name for entry in found} == {"retention.ms", "min.insync.replicas", *CONFIGS_READ_BY_NAME}


class OffsetsAdmin:
    """Answers list_offsets; counts the calls whose answers were not all read when another call was made."""

    def __init__(self) -> None:
        self.unread: dict[int, int] = {}  # call -> answers not read yet
        self.most_out = 0

    def list_offsets(self, asked: dict[TopicPartition, Any], request_timeout: float,
                     isolation_level: Any) -> dict[TopicPartition, Any]:
        call = len(self.unread)
        self.unread[call] = len(asked)
        self.most_out = max(self.most_out, sum(1 for left in self.unread.values() if left))
        return {tp: self._answer(call, tp.partition) for tp in asked}

    def _answer(self, call: int, offset: int) -> Any:
        admin = self

        class Answer:
            def result(self) -> Any:
                admin.unread[call] -= 1
                return SimpleNamespace(offset=offset)

        return Answer()


def test_list_offsets_keeps_few_calls_out_at_once():
    admin = OffsetsAdmin()
    tps = [TopicPartition(f"t{i // 10}", i) for i in range(10 * LIST_OFFSETS_BATCH + 1)]
    offsets = list_offsets(admin, tps, OffsetSpec.latest())  # type: ignore[arg-type]
    assert offsets == {(tp.topic, tp.partition): tp.partition for tp in tps}
    assert len(admin.unread) == 11  # calls of LIST_OFFSETS_BATCH partitions
    assert admin.most_out == LIST_OFFSETS_IN_FLIGHT < 11
