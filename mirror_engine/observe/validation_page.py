"""The one rendering of a validation report (the dict of `spark_jobs.validation.ValidationReport.to_dict()`, as
the JSON file and the report store hold it) as HTML: the page the validation job writes beside its JSON, and the
same section inside the cockpit's validation page. Plain HTML and SVG, no script; every name escaped."""

from __future__ import annotations

import html
from typing import Any

__all__ = ["render_validation_page", "render_validation_section"]

_BAR_WIDTH, _CHART_HEIGHT = 28, 160
_SOURCE, _TARGET = "#4c78a8", "#72b7b2"


def render_validation_page(report: dict[str, Any]) -> str:
    """A whole HTML document: the plan's name, then `render_validation_section`."""
    status = "clean" if report["clean"] else "NOT CLEAN"
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>Validation of {html.escape(report["plan"])}: {status}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; }} table {{ border-collapse: collapse; }}
td, th {{ border: 1px solid #ccc; padding: 4px 8px; text-align: right; }} td:first-child {{ text-align: left; }}
tr.bad {{ background: #fde2e1; }} .status {{ font-size: 1.4em; color: {"#2e7d32" if report["clean"] else "#c62828"}; }}
</style></head><body>
<h1>Validation of plan {html.escape(report["plan"])}</h1>
{render_validation_section(report)}</body></html>
"""


def render_validation_section(report: dict[str, Any]) -> str:
    """The report's verdict, totals and notes, a chart of source and target records per partition, and a table of
    the partitions (a row of class `bad` per partition that is not clean, with its first problem offsets)."""
    rows = report["partitions"]
    status = "clean" if report["clean"] else "NOT CLEAN"
    totals = report["totals"]
    width = 60 + len(rows) * (2 * _BAR_WIDTH + 12)
    return f"""<p class="status">{status}</p>
<p>Mode: {report["mode"]}{f" (fraction {report['sample_fraction']})" if report["mode"] == "sample" else ""}.
Source records {totals["source_records"]}, target records {totals["target_records"]}; missing {totals["missing"]},
extra {totals["extra"]} (of which duplicates {totals["duplicates"]}), changed {totals["changed"]},
out of order {totals["out_of_order"]}{_unmapped(totals)}.</p>
{"".join(f"<p>Note: {html.escape(note)}.</p>" for note in report.get("notes", []))}
<h2>Records per partition</h2>
<svg width="{width}" height="{_CHART_HEIGHT + 40}" role="img" aria-label="source and target records per partition">
{_bars(rows)}
{_legend(width)}
</svg>
<h2>Partitions</h2>
<table><tr><th>topic</th><th>partition</th><th>source</th><th>target</th><th>missing</th><th>extra</th>
<th>duplicates</th><th>changed</th><th>out of order</th><th>first offsets</th></tr>
{_table_rows(rows)}
</table>"""


def _bars(rows: list[dict[str, Any]]) -> str:
    tallest = max([max(r["source_records"], r["target_records"]) for r in rows] + [1])
    bars = []
    for i, row in enumerate(rows):
        for j, (kind, colour) in enumerate((("source_records", _SOURCE), ("target_records", _TARGET))):
            height = _CHART_HEIGHT * row[kind] / tallest
            x = 40 + i * (2 * _BAR_WIDTH + 12) + j * _BAR_WIDTH
            bars.append(f'<rect x="{x}" y="{_CHART_HEIGHT - height + 10:.1f}" width="{_BAR_WIDTH - 2}" '
                        f'height="{height:.1f}" fill="{colour}"><title>{html.escape(row["topic"])}'
                        f'[{row["partition"]}] {kind.split("_")[0]}: {row[kind]}</title></rect>')
        bars.append(f'<text x="{40 + i * (2 * _BAR_WIDTH + 12)}" y="{_CHART_HEIGHT + 26}" font-size="10">'
                    f'{html.escape(row["topic"][-12:])}[{row["partition"]}]</text>')
    return "".join(bars)


def _legend(width: int) -> str:
    return "".join(
        f'<rect x="{width - x}" y="4" width="10" height="10" fill="{colour}"/>'
        f'<text x="{width - x + 14}" y="13" font-size="11">{label}</text>'
        for x, colour, label in ((150, _SOURCE, "source"), (80, _TARGET, "target"))
    )


def _table_rows(rows: list[dict[str, Any]]) -> str:
    return "\n".join(
        f'<tr class="{"ok" if r["clean"] else "bad"}"><td>{html.escape(r["topic"])}</td><td>{r["partition"]}</td>'
        f'<td>{r["source_records"]}</td><td>{r["target_records"]}</td><td>{r["missing"]}</td><td>{r["extra"]}</td>'
        f'<td>{r["duplicates"]}</td><td>{r["changed"]}</td><td>{r["out_of_order"]}</td>'
        f'<td>{html.escape(_firsts(r))}</td></tr>'
        for r in rows
    )


def _firsts(row: dict[str, Any]) -> str:
    parts = []
    for kind, label in (("first_missing", "missing at source"), ("first_extra", "extra at target"),
                        ("first_changed", "changed source->target"), ("first_out_of_order", "out of order at")):
        if row.get(kind):
            parts.append(f"{label} {row[kind]}")
    return "; ".join(parts)


def _unmapped(totals: dict) -> str:
    """The records whose schema id did not map to the target's (a plan with registries), compared as they are."""
    count = totals.get("unmapped", 0)
    return f"; {count} source record(s) whose schema id did not map, compared as they are" if count else ""
