"""One rendering of a validation report: the page the validation job writes and the cockpit's validation page show
the same section, and the job's page is what it was (`data/validation_page.html`)."""

from __future__ import annotations

from pathlib import Path

from kafka_migration.cockpit import pages

from mirror_engine.observe import render_validation_page, render_validation_section
from spark_jobs.validation import PartitionResult, ValidationReport

GOLDEN = Path(__file__).parent / "data" / "validation_page.html"


def _report() -> ValidationReport:
    return ValidationReport("demo<&>", "sample", [
        PartitionResult("orders", 0, 1000, 995, missing=[0, 1, 2, 3, 4, 5]),
        PartitionResult("pay<ments>&co", 1, 500, 502, extra=[10, 11], duplicates=1, changed=[(7, 9)],
                        out_of_order=[3]),
        PartitionResult("audit", 2, 0, 0),
    ], sample_fraction=0.25, notes=["topic audit is compared by key, value and headers <LogAppendTime>"])


def test_the_validation_jobs_page_is_unchanged():
    assert _report().to_html() == GOLDEN.read_text()
    assert render_validation_page(_report().to_dict()) == GOLDEN.read_text()


def test_the_cockpit_shows_the_section_of_the_jobs_page():
    report = _report().to_dict()
    section = render_validation_section(report)
    assert section in _report().to_html()
    stored = {"name": "20260101T000000", "stored_ms": 1, "report": report}
    assert section in pages.validations_page("demo", [stored], "/kafka-migrations/", None)


def test_a_damaged_partition_is_a_bad_row_with_its_first_offsets_and_a_clean_one_is_not():
    section = render_validation_section(_report().to_dict())
    rows = {row.split("<td>")[1].split("</td>")[0]: row for row in section.split("\n") if row.startswith("<tr class")}
    assert rows["orders"].startswith('<tr class="bad">') and "missing at source [0, 1, 2, 3, 4]" in rows["orders"]
    assert "changed source-&gt;target [[7, 9]]" in rows["pay&lt;ments&gt;&amp;co"]
    assert rows["audit"].startswith('<tr class="ok">')
    assert "<script" not in section and "pay<ments>" not in section
