"""A malformed record in a flow's internal topics (written by anyone who can write to the target) is skipped,
counted and said once by every reader: the sensors, `status` and the cockpit go on with the valid records."""

from __future__ import annotations

import json
import logging
import time

import pytest
from confluent_kafka import Producer

from mirror_engine.flow import (
    ControlChannel,
    FlowMapping,
    InternalTopics,
    PartitionProgress,
    ensure_internal_topics,
    load_progress,
    progress_key,
)
from mirror_engine.kafka import admin_client
from mirror_engine.kafka.testing import internal_reader
from mirror_engine.mm2 import OffsetSync
from mirror_engine.observe import ReportStore, WorkerStatusFeed, read_worker_statuses, render_flow_status
from tests.integration.plans import make_plan

pytestmark = [pytest.mark.integration]


def _write(config: dict, topic: str, records: list[tuple[bytes | None, bytes | None]]) -> None:
    producer = Producer({**config, "enable.idempotence": True, "acks": "all"})
    failed = []
    for key, value in records:
        producer.produce(topic, value, key, 0, on_delivery=lambda error, _m: error and failed.append(error))
    assert producer.flush(30) == 0 and not failed, failed


def _status(worker: str) -> bytes:
    now = int(time.time() * 1000)
    return json.dumps({"worker": worker, "state": "running", "mode": "worker", "updated_ms": now, "interval_s": 5,
                       "lag": 3, "records_per_s": 1.5, "last_error": None, "http": None, "exactly_once": False,
                       "partitions": [{"topic": "orders", "partition": 0, "lag": 3, "lag_ms": 20,
                                       "records_per_s": 1.5, "records_copied": 7, "failed": None}]}).encode()


def test_every_internal_topic_reader_skips_counts_and_says_once_what_is_malformed(kafka_pair, unique_name, caplog):
    source, target = kafka_pair
    config = target.client_config()
    plan = make_plan(source, target, unique_name, name=f"malformed{unique_name[-8:]}")
    topics = InternalTopics.for_plan(plan)
    ensure_internal_topics(admin_client(config), topics)
    good_progress = PartitionProgress("orders", 0, 10, 10)
    _write(config, topics.progress, [
        (good_progress.key("src"), good_progress.value()),
        (b'["mirror-engine", {"cluster": "src", "topic": "orders"}]', b'{"offset": 4}'),  # no partition
        (progress_key("src", "orders", 1), b'{"position": "far"}'),  # no offset, position not a number
        (progress_key("src", "orders", 2), b"not json"),
        (b"[1]", b'{"offset": 1}'),
    ])
    sync = OffsetSync("orders", 0, 0, 0)
    _write(config, topics.offset_syncs, [(sync.record_key(), sync.record_value()),
                                         (b"\x00", b"short")])
    _write(config, topics.control, [
        (b"flow", b'{"state": "paused"}'),
        (b"backfill:orders", b'{"state": "pending", "partitions": {"0": [5]}}'),  # a range with one end
        (b"topic:payments", b"[1, 2]"),
        (b"topic:orders", b'{"state": "switched"}'),
    ])
    _write(config, topics.status, [(b"w1", _status("w1")), (b"w2", b'{"worker": "w2"}'), (b"w3", b"{")])
    _write(config, topics.reports, [(b"validation:bad", b'{"kind": "validation"}'),
                                    (b"validation:noise", b"\xff\xfe")])
    ReportStore(plan, config).put("validation", "good", {"clean": True})

    caplog.set_level(logging.WARNING, logger="mirror_engine.kafka.internal_reader")
    assert load_progress(config, topics.progress) == {("orders", 0): good_progress}
    control = ControlChannel(plan, config)
    control.load()
    assert control.flow_state == "paused" and control.switched_topics == {"orders"} and control.backfills == {}
    statuses = read_worker_statuses(plan, config)
    assert [s["worker"] for s in statuses] == ["w1"]
    assert "w1" in render_flow_status(statuses)
    feed = WorkerStatusFeed(plan, config)
    assert [s["worker"] for s in feed.poll()] == ["w1"]
    feed.close()
    store = ReportStore(plan, config)
    assert [r["name"] for r in store.newest("validation")] == ["good"]
    store.close()
    with FlowMapping(plan, config) as mapping:
        mapping.refresh()
        assert mapping.copied_position("orders", 0) == 10
        assert mapping.translate("orders", 0, 0) == 0

    ours = (topics.progress, topics.control, topics.status, topics.reports, topics.offset_syncs)
    # Only this plan's topics: a reader another test left running in this process may log of its own.
    warnings = [r.getMessage() for r in caplog.records
                if "malformed" in r.getMessage() and any(f" in {topic} " in r.getMessage() for topic in ours)]
    # One line per topic, naming it and the count, never one per record; reading again says nothing more.
    assert sorted(w.split(" in ")[1].split(" ")[0] for w in warnings) == sorted(
        [topics.progress, topics.control, topics.status, topics.reports, topics.offset_syncs])
    assert any(f"skipped 4 malformed record(s) in {topics.progress}" in w for w in warnings)
    assert internal_reader.skipped_counts[topics.progress] == 4
    assert internal_reader.skipped_counts[topics.status] == 2
    caplog.clear()
    load_progress(config, topics.progress)
    control.load()
    assert not [r for r in caplog.records if "malformed" in r.getMessage()]

    # A malformed control record arriving while an engine follows the topic is skipped the same way.
    _write(config, topics.control, [(b"flow", b'{"state": ["running"]}'), (b"flow", b'{"state": "running"}')])
    deadline = time.monotonic() + 10
    while control.flow_state != "running" and time.monotonic() < deadline:
        control.poll()
        time.sleep(0.1)
    assert control.flow_state == "running"
    control.close()
