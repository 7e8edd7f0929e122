"""The cockpit's HTML: numbers with units and separators, problems in red, first problem offsets listed."""

from __future__ import annotations

from kafka_migration.cockpit import pages


def test_numbers_carry_units_and_thousands_separators():
    assert pages.count(1234567, "records") == "1,234,567 records"
    assert pages.count(2.5, "records/s") == "2.5 records/s"
    assert pages.count(None) == pages.NONE
    assert pages.duration(42) == "42 s" and pages.duration(600) == "10 min" and pages.duration(7200) == "2.0 h"
    assert pages.duration(None).startswith("never")


def test_a_damaged_partition_is_red_with_its_first_offsets_and_a_clean_one_is_not():
    report = {"partitions": [
        {"topic": "orders", "partition": 0, "source_records": 1000, "target_records": 995, "missing": 5,
         "extra": 0, "duplicates": 0, "changed": 0, "out_of_order": 0, "first_missing": [0, 1, 2],
         "first_extra": [], "first_changed": [], "first_out_of_order": []},
        {"topic": "orders", "partition": 1, "source_records": 1000, "target_records": 1000, "missing": 0,
         "extra": 0, "duplicates": 0, "changed": 1, "out_of_order": 0, "first_missing": [], "first_extra": [],
         "first_changed": [[7, 7]], "first_out_of_order": []}]}
    damaged, changed = pages.validation_rows(report)
    assert "class='bad'>orders[0]" in damaged[0] and damaged[-1] == "missing at 0, 1, 2"
    assert changed[-1] == "changed at 7/7"
    clean = {"partitions": [{**report["partitions"][0], "missing": 0, "first_missing": []}]}
    assert "bad" not in "".join(pages.validation_rows(clean)[0])


def test_the_history_chart_draws_both_lines_and_waits_for_two_points():
    assert "<svg" not in pages.history_chart([{"t_ms": 0, "lag": 5, "records_per_s": 1.0}])
    chart = pages.history_chart([{"t_ms": 0, "lag": 500, "records_per_s": 10.0},
                                 {"t_ms": 10_000, "lag": 0, "records_per_s": 50.0}])
    assert chart.count("<polyline") == 2 and "up to 500 records" in chart and "up to 50 records/s" in chart
