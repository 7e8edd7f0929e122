"""The worker status as Prometheus text and as the `mirror-engine status` table."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from mirror_engine.observe import flow_problems, is_live, prometheus_text, render_flow_status, status_record

NOW_MS = 1_800_000_000_000


def partition(topic: str, number: int, lag: int = 0, failed: str | None = None) -> dict:
    return {"topic": topic, "partition": number, "target_topic": topic, "position": 100, "lag": lag,
            "lag_ms": 2500 if lag else 0, "records_copied": 100, "records_per_s": 50.0, "bytes_fetched": 4000,
            "bytes_per_s": 2000.0, "catch_up_s": lag / 50 if lag else 0, "replication_latency_ms": 12,
            "record_age_ms": None, "failed": failed}


def status(worker: str, partitions: list[dict], state: str = "running", seen_ms_ago: int = 1000,
           last_error: str | None = None) -> dict:
    return {"plan": "p", "source": "src", "target": "tgt", "worker": worker, "mode": "worker", "exactly_once": False,
            "state": state, "updated_ms": NOW_MS - seen_ms_ago, "interval_s": 5.0, "http": None,
            "records_copied": 100 * len(partitions), "records_per_s": 50.0 * len(partitions),
            "lag": sum(p["lag"] for p in partitions), "last_error": last_error, "partitions": partitions}


def record_of(snapshot: dict) -> dict:
    """The status record of a snapshot that lists every partition."""
    parts = snapshot["partitions"]
    return status_record(snapshot, parts, [(p["topic"], p["partition"]) for p in parts], len(parts))


def test_metrics_parse_as_prometheus_text_with_escaped_labels():
    odd_topic = 'orders"eu\\west'
    text = prometheus_text(status("w1", [partition(odd_topic, 0, lag=7), partition("b", 1)]))
    families = {f.name: f for f in text_string_to_metric_families(text)}
    lag = {(s.labels["topic"], s.labels["partition"]): s.value for s in families["mirror_engine_lag_records"].samples}
    assert lag == {(odd_topic, "0"): 7, ("b", "1"): 0}
    assert families["mirror_source_record_count"].type == "counter"
    # A value the worker does not know yet is left out, not written as a number.
    assert not families["mirror_source_record_age_ms"].samples
    states = {s.labels["state"]: s.value for s in families["mirror_engine_flow_state"].samples}
    assert states == {"running": 1, "paused": 0, "stopped": 0, "exited": 0}


def test_a_worker_is_live_until_silent_for_three_intervals_or_exited():
    assert is_live(status("w1", []), NOW_MS)
    assert is_live(status("w1", [], seen_ms_ago=15_000), NOW_MS)
    silent = status("w2", [], seen_ms_ago=16_000)
    assert not is_live(silent, NOW_MS)
    assert not is_live(status("w3", [], state="exited"), NOW_MS)


def test_problems_name_the_worker_partition_and_reason(monkeypatch):
    from mirror_engine.observe.testing import status as status_module

    monkeypatch.setattr(status_module.time, "time", lambda: NOW_MS / 1000)
    statuses = [status("w1", [partition("a", 0, lag=5, failed="records 3..9 were deleted")]),
                status("w2", [], last_error="refresh failed: timeout"),
                status("w3", [partition("b", 0, failed="gone")], seen_ms_ago=60_000)]  # silent: ignored
    assert flow_problems(statuses) == ["worker w1: a[0]: records 3..9 were deleted",
                                       "worker w2: refresh failed: timeout"]


def test_status_table_sums_lag_per_topic_over_live_workers():
    statuses = [status("w1", [partition("orders", 0, lag=300), partition("orders", 1, lag=0)]),
                status("w2", [partition("orders", 2, lag=700), partition("audit", 0)]),
                status("w3", [partition("orders", 3, lag=5000)], seen_ms_ago=60_000)]
    table = render_flow_status(statuses, NOW_MS)
    rows = {line.split()[0]: line.split() for line in table.splitlines() if line.startswith(("orders", "audit"))}
    assert rows["orders"][1:4] == ["3", "1,000", "2,500"]  # partitions, lag, lag ms (w3 is silent: left out)
    assert rows["orders"][5] == "7s"  # 1,000 records at 150 rec/s
    assert rows["audit"][2] == "0"
    assert "silent" in next(line for line in table.splitlines() if line.startswith("w3"))


def test_a_status_record_stays_small_whatever_the_partition_count():
    import json

    from mirror_engine.observe import STATUS_PARTITIONS

    def record_bytes(topics: int, per_topic: int) -> int:
        parts = [partition(f"orders.t{t:05d}", p, lag=t) for t in range(topics) for p in range(per_topic)]
        return len(json.dumps(record_of(status("w1", parts))))

    small, large = record_bytes(2, 10), record_bytes(1000, 10)  # 20 and 10,000 partitions
    assert large <= 64 * 1024
    assert large < 2 * record_bytes(10, 10) + 30 * 1024  # the assignment's ranges aside, no growth past the worst N
    assert small < large
    parts = [partition("a", p, lag=p) for p in range(200)] + [partition("b", 0, failed="gone")]
    record = record_of(status("w1", parts))
    shown = [(p["topic"], p["partition"]) for p in record["partitions"]]
    assert len(shown) == STATUS_PARTITIONS and shown[:3] == [("b", 0), ("a", 199), ("a", 198)]
    assert record["partition_count"] == 201 and not record["partitions_complete"]
    assert record["assigned"] == {"a": "0-199", "b": "0"}


def test_readers_see_every_assigned_partition_and_the_count_of_a_bounded_record():
    from mirror_engine.observe import assigned_partitions, partition_count

    parts = [partition("a", p) for p in (*range(0, 60), 61, *range(70, 80))]
    record = record_of(status("w1", parts))
    assert assigned_partitions(record) == {("a", p) for p in (*range(0, 60), 61, *range(70, 80))}
    assert partition_count(record) == 71
    old = status("w0", [partition("a", 0), partition("a", 1)])  # a record of a version that listed every one
    assert assigned_partitions(old) == {("a", 0), ("a", 1)} and partition_count(old) == 2
    too_many = {**record, "assigned": None}
    assert assigned_partitions(too_many) is None and partition_count(too_many) == 71
    table = render_flow_status([record], NOW_MS)
    assert "   71 " in table.splitlines()[1] and "stored_lag" in table
