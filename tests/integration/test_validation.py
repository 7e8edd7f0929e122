"""Spark validation on real clusters: a correct copy is clean; each kind of damage is found where it is."""

from __future__ import annotations

import json
import time

import pytest
import yaml
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from mirror_engine.flow import InternalTopics, PartitionProgress, ensure_internal_topics
from mirror_engine.mm2 import OffsetSync
from mirror_engine.observe import ReportStore
from mirror_engine.plan import plan_from_dict
from mirror_engine.replication import Replicator
from spark_jobs import validate
from tests.integration.kafka_data import produce, read_partition
from tests.integration.plans import create_topics, plan_dict

pytestmark = [pytest.mark.integration, pytest.mark.spark]

NOW = int(time.time() * 1000)
PARTITIONS = 4


def _records(count: int) -> list[tuple]:
    return [(i % PARTITIONS, None if i % 11 == 0 else f"k{i % 40}".encode(),
             None if i % 13 == 0 else f"value-{i}".encode(), [("n", str(i).encode())] if i % 3 else None, NOW + i)
            for i in range(count)]


def _validate(plan_data: dict, tmp_path, in_process: bool = False) -> tuple[int, dict]:
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(plan_data))
    reports = tmp_path / "reports"
    status = validate.main(["--plan", str(plan_file), "--report-dir", str(reports),
                            *(["--in-process"] if in_process else [])])
    report = json.loads(next(reports.glob("*.json")).read_text())
    assert next(reports.glob("*.html")).read_text().count("<tr") == len(report["partitions"]) + 1
    # The same report is kept on the target, newest first among the plan's validations.
    plan = plan_from_dict(plan_data)
    stored = ReportStore(plan, plan.client_configs()[1]).newest("validation")[0]
    assert stored["report"] == report
    return status, {row["partition"]: row for row in report["partitions"]}


# Spark, and the same comparison in the calling process (the DAG's way for a small copy): the same report.
WAYS = [pytest.param(False, id="spark"), pytest.param(True, id="in-process")]


@pytest.mark.parametrize("in_process", WAYS)
def test_a_correct_copy_is_clean(kafka_pair, spark, unique_name, tmp_path, in_process):
    source, target = kafka_pair
    topic = f"{unique_name}-ok"
    create_topics(source, [NewTopic(topic, PARTITIONS, 1)])
    produce(source, topic, _records(2000))
    data = plan_dict(source, target, topic)
    assert Replicator(plan_from_dict(data), source.client_config(), target.client_config()).run(
        max_seconds=120, until_caught_up=True).ok
    status, rows = _validate(data, tmp_path, in_process)
    assert status == 0, rows
    assert sum(row["source_records"] for row in rows.values()) == 2000
    assert all(row["clean"] and row["source_records"] == row["target_records"] for row in rows.values())


def _damaged_copy(source, target, topic: str) -> dict:
    """The target copy is written by hand with one damage per partition; the flow's mapping says it is exact."""
    create_topics(source, [NewTopic(topic, PARTITIONS, 1)])
    create_topics(target, [NewTopic(topic, PARTITIONS, 1)])
    produce(source, topic, [(p, f"k{i}".encode(), f"v{p}-{i}".encode(), [("h", b"original")], NOW + i)
                            for p in range(PARTITIONS) for i in range(50)])
    copied = {p: [(r.key, r.value, list(r.headers), r.timestamp) for r in read_partition(source, topic, p)]
              for p in range(PARTITIONS)}
    copied[0].pop(10)  # a record missing
    copied[1].insert(21, copied[1][20])  # a record duplicated
    key, _value, headers, ts = copied[2][30]
    copied[2][30] = (key, b"changed", headers, ts)  # a value changed
    key, value, _headers, ts = copied[3][40]
    copied[3][40] = (key, value, [("h", b"tampered")], ts)  # a header changed
    produce(target, topic, [(p, k, v, h, t) for p in range(PARTITIONS) for k, v, h, t in copied[p]])

    data = plan_dict(source, target, topic)
    topics = InternalTopics.for_plan(plan_from_dict(data))
    ensure_internal_topics(AdminClient(target.client_config()), topics)
    producer = Producer(target.client_config())
    for p in range(PARTITIONS):
        sync = OffsetSync(topic, p, 0, 0)
        producer.produce(topics.offset_syncs, sync.record_value(), sync.record_key(), 0)
        progress = PartitionProgress(topic, p, 50, len(copied[p]), "")
        producer.produce(topics.progress, progress.value(), progress.key("src"), 0)
    assert producer.flush(30) == 0
    return data


@pytest.mark.parametrize("in_process", WAYS)
def test_each_damage_is_found_at_its_partition_and_offset(kafka_pair, spark, unique_name, tmp_path, in_process):
    data = _damaged_copy(*kafka_pair, f"{unique_name}-damaged")
    status, rows = _validate(data, tmp_path, in_process)
    assert status == 1
    assert (rows[0]["missing"], rows[0]["first_missing"], rows[0]["extra"]) == (1, [10], 0)
    assert (rows[1]["extra"], rows[1]["duplicates"], rows[1]["first_extra"], rows[1]["missing"]) == (1, 1, [21], 0)
    assert (rows[2]["changed"], rows[2]["first_changed"], rows[2]["missing"], rows[2]["extra"]) == (1, [[30, 30]], 0, 0)
    assert (rows[3]["changed"], rows[3]["first_changed"]) == (1, [[40, 40]])
    assert all(row["out_of_order"] == 0 for row in rows.values())


def test_a_sample_is_the_same_records_in_spark_and_in_process(kafka_pair, spark, unique_name, tmp_path):
    """Sample mode picks records by fingerprint on both sides: Spark's tasks and the in-process comparison pick
    the same ones, so report the same counts and the same damage where it fell into the sample."""
    data = _damaged_copy(*kafka_pair, f"{unique_name}-sampled")
    data["validation"] = {"mode": "sample", "sample_fraction": 0.5}
    (spark_tmp := tmp_path / "spark").mkdir()
    (local_tmp := tmp_path / "local").mkdir()
    spark_status, by_spark = _validate(data, spark_tmp)
    local_status, in_process = _validate(data, local_tmp, in_process=True)
    assert (spark_status, by_spark) == (local_status, in_process)
    sampled = sum(row["source_records"] for row in by_spark.values())
    assert 50 < sampled < 150, sampled  # about half of 200
