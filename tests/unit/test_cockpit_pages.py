"""The cockpit's HTML: numbers with units and separators, problems in red (its validation report:
`test_validation_page.py`)."""

from __future__ import annotations

from kafka_migration.cockpit import pages


def test_numbers_carry_units_and_thousands_separators():
    assert pages.count(1234567, "records") == "1,234,567 records"
    assert pages.count(2.5, "records/s") == "2.5 records/s"
    assert pages.count(None) == pages.NONE
    assert pages.duration(42) == "42 s" and pages.duration(600) == "10 min" and pages.duration(7200) == "2.0 h"
    assert pages.duration(None).startswith("never")


def test_the_history_chart_draws_both_lines_and_waits_for_two_points():
    assert "<svg" not in pages.history_chart([{"t_ms": 0, "lag": 5, "records_per_s": 1.0}])
    chart = pages.history_chart([{"t_ms": 0, "lag": 500, "records_per_s": 10.0},
                                 {"t_ms": 10_000, "lag": 0, "records_per_s": 50.0}])
    assert chart.count("<polyline") == 2 and "up to 500 records" in chart and "up to 50 records/s" in chart
