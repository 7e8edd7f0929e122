"""What the backfill stores once its ranges are on the target: every offset-sync, acknowledged, then each partition's
progress at the end of its range (without a broker: the target's clients are stand-ins)."""

from __future__ import annotations

from typing import Any

import pytest

import mirror_engine.flow
import mirror_engine.kafka
from mirror_engine.flow import InternalTopics, PartitionProgress
from mirror_engine.mm2 import OffsetSync
from mirror_engine.plan import plan_from_dict
from mirror_engine.replication.testing import side_records
from spark_jobs import backfill
from spark_jobs.backfill import PartitionBackfill

PLAN = plan_from_dict({
    "name": "shop",
    "source": {"alias": "src", "bootstrap_servers": "127.0.0.1:19092"},
    "target": {"alias": "tgt", "bootstrap_servers": "127.0.0.1:29092"},
    "topics": {"include": ["orders.*"]},
})
TOPICS = InternalTopics.for_plan(PLAN)


class Target:
    """The target as the backfill's producer sees it: records in the order produced, and each flush."""

    def __init__(self) -> None:
        self.events: list[Any] = []
        self.settings: dict[str, Any] = {}
        self.refuse = ""

    def producer(self, settings: dict[str, Any]) -> Target:
        self.settings = settings
        return self

    def produce(self, topic: str, value: bytes | None = None, key: bytes | None = None, partition: int = -1,
                on_delivery: Any = None, *_rest: Any, **kwargs: Any) -> None:
        self.events.append((topic, partition, key, value))
        callback = on_delivery or kwargs.get("on_delivery") or self.settings.get("on_delivery")
        if callback is not None:
            self.pending = [*getattr(self, "pending", []), (callback, topic, partition, key, value)]

    def poll(self, _timeout: float = 0) -> int:
        return self.flush()

    def flush(self, _timeout: float = 0) -> int:
        from confluent_kafka import KafkaError, Message

        self.events.append("flush")
        for callback, topic, partition, key, value in getattr(self, "pending", []):
            error = KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED, self.refuse) if self.refuse else None
            callback(error, Message(topic=topic, partition=partition, key=key, value=value))
        self.pending = []
        return 0


@pytest.fixture
def target(monkeypatch: pytest.MonkeyPatch) -> Target:
    stand_in = Target()
    monkeypatch.setattr(side_records, "Producer", stand_in.producer)
    monkeypatch.setattr(mirror_engine.kafka, "admin_client", lambda config: object())
    monkeypatch.setattr(mirror_engine.flow, "ensure_internal_topics", lambda admin, topics: None)
    monkeypatch.setattr(mirror_engine.kafka, "list_offsets",
                        lambda admin, tps, spec, **kw: {("orders", 0): 110, ("orders", 1): 3})
    return stand_in


PARTS = [PartitionBackfill("orders", 0, "orders", 0, 12, 100, records=10, syncs=[(0, 100), (7, 104)]),
         PartitionBackfill("orders", 1, "orders", 5, 8, 0, records=3, syncs=[(5, 0)])]


def test_the_syncs_are_acknowledged_before_the_progress_is_written(target: Target):
    backfill._store_progress(PLAN, {"bootstrap.servers": "127.0.0.1:29092"}, PARTS)
    syncs = [(TOPICS.offset_syncs, 0, s.record_key(), s.record_value()) for s in
             (OffsetSync("orders", 0, 0, 100), OffsetSync("orders", 0, 7, 104), OffsetSync("orders", 1, 5, 0))]
    progress = [(TOPICS.progress, 0, p.key("src"), p.value()) for p in
                (PartitionProgress("orders", 0, 12, 110), PartitionProgress("orders", 1, 8, 3))]
    records = [event for event in target.events if event != "flush"]
    assert records == syncs + progress
    first_progress = target.events.index(progress[0])
    assert "flush" in target.events[:first_progress]  # every sync acknowledged before any progress
    assert target.events[-1] == "flush"
    # The copy contract's producer, as the engine's: idempotent, acks=all, gapless.
    assert target.settings["enable.idempotence"] is True and target.settings["acks"] == "all"
    assert target.settings["enable.gapless.guarantee"] is True


def test_a_refused_offset_sync_fails_the_backfill_before_any_progress(target: Target):
    target.refuse = "denied"
    with pytest.raises(RuntimeError, match=r"writing offset-sync for orders\[0\] failed: denied"):
        backfill._store_progress(PLAN, {"bootstrap.servers": "127.0.0.1:29092"}, PARTS)
    assert not [event for event in target.events if event != "flush" and event[0] == TOPICS.progress]


def test_a_target_that_ends_elsewhere_stores_nothing(target: Target):
    wrong = [PartitionBackfill("orders", 0, "orders", 0, 12, 100, records=9, syncs=[(0, 100)])]
    with pytest.raises(RuntimeError, match=r"orders\[0\] ends at 110, not at 109"):
        backfill._store_progress(PLAN, {"bootstrap.servers": "127.0.0.1:29092"}, wrong)
    assert target.events == []
