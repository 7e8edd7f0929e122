"""The cockpit's HTML: numbers with units and separators, problems in red (its validation report:
`test_validation_page.py`)."""

from __future__ import annotations

import json

from kafka_migration.cockpit import migration_pages, pages

from mirror_engine.observe import FlowView


def test_numbers_carry_units_and_thousands_separators():
    assert pages.count(1234567, "records") == "1,234,567 records"
    assert pages.count(2.5, "records/s") == "2.5 records/s"
    assert pages.count(None) == pages.NONE
    assert pages.duration(42) == "42 s" and pages.duration(600) == "10 min" and pages.duration(7200) == "2 h"
    assert pages.duration(None) == pages.NONE


def test_lag_and_rates_are_charted_on_separate_labelled_axes_and_wait_for_two_points():
    assert "<svg" not in migration_pages.history_charts([{"t_ms": 0, "lag": 5, "records_per_s": 1.0,
                                                          "write_rate": 1.0}])
    charts = migration_pages.history_charts([
        {"t_ms": 0, "lag": 180, "records_per_s": 7160.0, "write_rate": 200.0},
        {"t_ms": 10_000, "lag": 260, "records_per_s": 200.0, "write_rate": 200.0},
        {"t_ms": 20_000, "lag": 60, "records_per_s": 210.0, "write_rate": 200.0}])
    lag_chart, rate_chart = charts.split("</svg>")[:2]
    assert lag_chart.count("<polyline") == 1 and "lag (records)" in lag_chart
    assert ">500</text>" in lag_chart and ">250</text>" in lag_chart and ">0</text>" in lag_chart  # y-axis ticks
    assert lag_chart.count("data-hm=") == 3  # x-axis: times
    assert rate_chart.count("<polyline") == 2 and "copy rate (records/s)" in rate_chart
    assert "source writes (records/s)" in rate_chart and ">10,000</text>" in rate_chart


def _snapshot(partitions: int) -> dict:
    return {
        "plan": "big", "source": "src", "target": "tgt", "flow_state": "running", "switched_topics": [],
        "engines": [{"worker": "w1", "state": "running", "partitions": partitions, "records_per_s": 10.0,
                     "updated_ms": 1}],
        "engines_seen": 1, "lag": partitions, "lag_ms": 1000, "records_per_s": 10.0, "write_rate": 5.0,
        "eta_s": None, "eta": "not converging", "problems": [], "stopped_partitions": 1,
        "partition_count": partitions,
        "partitions": [{"topic": f"topic-{i // 10}", "partition": i % 10, "source_end": 100, "copied": 99,
                        "lag": i % 7, "lag_ms": 1000, "latency_ms": None, "records_per_s": 0.0,
                        "stopped": "not authorized" if i == 4321 else ""} for i in range(partitions)],
        "backfills": [{"topic": f"topic-{i // 10}", "partition": i % 10, "snapshot_offset": 50, "state": "waiting",
                       "copied": 0} for i in range(partitions)],
        "history": [],
        "checkpoints": [{"group": f"group-{g}", "partitions": 8, "newest_ms": 1_799_999_000_000 + g,
                         "oldest_ms": 1_799_998_000_000} for g in range(partitions // 10)],
        "at_ms": 1_800_000_000_000,
    }


def test_a_migration_of_10000_partitions_renders_one_page_of_them_stopped_and_most_behind_first():
    html = migration_pages.migration_page(FlowView.page_of(_snapshot(10_000)), "", "/kafka-migrations/")
    section = html.split("<div id='partitions'>")[1].split("<h2>")[0]
    rows = section.count("<tr>") - 1  # the header row
    assert rows == 50 and "page 1 of 200 (10,000 partitions)" in section
    first = section.split("<tr>")[2]
    assert "topic-432[1]" in first and "not authorized" in first  # the stopped partition leads
    assert "?page=2" in section


def test_a_migration_page_and_its_api_answer_stay_the_same_size_from_1000_to_10000_partitions():
    """Partitions, backfills and the groups' checkpoints: one page of each, with their counts; the groups
    checkpointed longest ago first."""
    sizes = {}
    for partitions in (1_000, 10_000):
        shown = FlowView.page_of(_snapshot(partitions), page=3)
        html = migration_pages.migration_page(shown, "", "/kafka-migrations/")
        sizes[partitions] = (html.count("<tr>"), len(html) // 1000, len(json.dumps(shown)) // 1000)
        assert shown["page"] == 3 and len(shown["partitions"]) == 50
        assert shown["checkpoint_groups"] == partitions // 10 and shown["checkpoints"][0]["group"] == "group-0"
        assert f"50 of {partitions // 10:,} groups" in html and f"50 of {partitions:,} partitions held" in html
        assert "written when its position moves" in html  # an idle group's checkpoint ages: said, not a fault
    assert sizes[1_000] == sizes[10_000], sizes


def test_the_status_strip_names_the_stage_and_each_wait_and_a_finished_run_its_result():
    from kafka_migration.cockpit.runs import RunRecord, Stage

    running = RunRecord("kafka_migration__big", "manual__1", "running", 1_800_000_000_000, None, [
        Stage("preflight", "success", 1, 2, []),
        Stage("catch_up", "deferred", 3, None, [{"task": "catch_up.wait_for_lag", "state": "deferred", "try": 1}])],
        [])
    strip = migration_pages.status_strip("big", running, ["catch_up.wait_for_lag: lag 180 > 0; waiting for 3 min "
                                                          "20 s; timeout in 56 min"], "/kafka-migrations/")
    assert "stage now: <b>catch_up</b>" in strip and "Waiting: catch_up.wait_for_lag: lag 180" in strip
    failed = RunRecord("kafka_migration__big", "manual__1", "failed", 1_000, 61_000, [
        Stage("switch_groups", "failed", 1, 2, [])], [])
    strip = migration_pages.status_strip("big", failed, [], "/kafka-migrations/")
    assert "failed</span>" in strip and "after 1 min" in strip and "failed in switch_groups" in strip
    assert "No migration run yet" in migration_pages.status_strip("big", None, [], "/kafka-migrations/")


def test_a_cutover_of_1000_groups_shows_one_page_of_them_the_unverified_and_not_switched_first():
    def report(ok: bool) -> dict:
        return {"direction": "src->tgt", "ok": ok, "fenced": False, "wait_empty_s": 1.0, "wait_copied_s": 1.0,
                "committed_s": 0.5, "switch_s": 0.8,
                "partitions": [{"topic": "orders", "partition": p, "target_topic": "orders", "proof": "ok",
                                "source_offset": 5, "target_offset": 5, "lag_at_switch": 0, "before": "a/a",
                                "at": "b/b"} for p in range(8)]}

    groups = [{"group": f"g{i:04d}", "state": "switched", "stored_ms": 1_000 + i, "report": report(i != 500)}
              for i in range(999)] + [{"group": "waiting", "state": "not started", "stored_ms": None, "report": None}]
    html = migration_pages.cutover_page({"plan": "big", "groups": groups, "topics": [], "approvals": []},
                                        "/kafka-migrations/")
    assert html.count("<h2>Group ") == 20 and "groups page 1 of 50 (1,000 groups, 998 switched" in html
    assert html.index("Group g0500") < html.index("Group waiting") < html.index("Group g0998")
    assert "/kafka-migrations/plans/big/cutover?page=2" in html
    last = migration_pages.cutover_page({"plan": "big", "groups": groups, "topics": [], "approvals": []},
                                        "/kafka-migrations/", 99)
    assert "groups page 50 of 50" in last and last.count("<h2>Group ") == 20 and "Group g0000" in last


def test_a_plans_schemas_are_shown_as_moved_with_their_ids_and_refusals_and_not_without_registries():
    moved = {"subjects": 1200, "versions": 3400, "ids_total": 3400, "translated": 3399,
             "ids": [[n, n + 7] for n in range(200)], "refused": ["subject a-value: the target holds something else"],
             "stored_ms": 1_800_000_000_000}
    html = migration_pages.migration_page(FlowView.page_of({**_snapshot(10), "schemas": moved}), "", "/k/")
    section = html.split("<div id='schemas'>")[1]
    assert "1,200 subject(s), 3,400 version(s)" in section and "3,399 of them translated" in section
    assert "subject a-value: the target holds something else" in section
    assert section.count("<tr>") - 1 == 200 and "200 of 3,400 schema ids shown" in section
    assert "<div id='schemas'>" not in migration_pages.migration_page(FlowView.page_of(_snapshot(10)), "", "/k/")
