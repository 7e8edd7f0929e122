"""HTML of the cockpit's pages: plain server-rendered HTML and SVG (no third-party script), read by people.

Numbers carry units and thousands separators; times are rendered by the browser in the user's timezone
(`data-ms` attributes); red marks only what is wrong.
"""

from __future__ import annotations

import html
import json
from typing import Any

from mirror_engine.observe import render_validation_section

STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.2rem; color: #1a202c; }
h1 { font-size: 1.4rem; margin: 0 0 .4rem; } h2 { font-size: 1.1rem; margin: 1.4rem 0 .4rem; }
nav a { margin-right: 1rem; }
table { border-collapse: collapse; margin: .4rem 0; }
td, th { padding: .25rem .6rem; border-bottom: 1px solid #e2e8f0; }
th { text-align: left; background: #f7fafc; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
.bad { color: #c53030; font-weight: 600; } .ok { color: #276749; } .muted { color: #718096; }
.cards { display: flex; gap: 1rem; flex-wrap: wrap; } .card { border: 1px solid #e2e8f0; padding: .5rem .9rem; }
.card b { display: block; font-size: 1.3rem; }
"""

REFRESH_JS = """
function fmtTimes(root) {
  root.querySelectorAll('[data-ms]').forEach(function (el) {
    var ms = Number(el.getAttribute('data-ms'));
    if (ms > 0) { el.textContent = new Date(ms).toLocaleString(); }
  });
}
function refresh(url, ids, everyMs) {
  function once() {
    fetch(url, {credentials: 'same-origin'}).then(function (r) { return r.json(); }).then(function (data) {
      ids.forEach(function (id) { var el = document.getElementById(id); if (el && data[id] !== undefined) {
        el.innerHTML = data[id]; fmtTimes(el); } });
    }).catch(function () {});
  }
  setInterval(once, everyMs);
}
fmtTimes(document);
"""


NONE = "&ndash;"  # no value


def esc(value: object) -> str:
    return html.escape(str(value))


def count(value: float | None, unit: str = "") -> str:
    if value is None:
        return NONE
    text = f"{value:,.0f}" if abs(value) >= 10 or float(value).is_integer() else f"{value:,.1f}"
    return f"{text} {unit}".strip()


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "never (not copying)"
    if seconds < 90:
        return f"{seconds:,.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:,.0f} min"
    return f"{seconds / 3600:,.1f} h"


def page(title: str, body: str, *, nav: str = "", script: str = "") -> str:
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(title)}</title><style>{STYLE}</style>"
            f"</head><body><nav>{nav}</nav><h1>{esc(title)}</h1>{body}<script>{REFRESH_JS}{script}</script>"
            "</body></html>")


def plan_nav(plan: str, prefix: str) -> str:
    p = esc(plan)
    return (f"<a href='{prefix}'>All migrations</a><a href='{prefix}plans/{p}'>Migration {p}</a>"
            f"<a href='{prefix}plans/{p}/cutover'>Cutover</a><a href='{prefix}plans/{p}/validations'>Validation</a>")


def table(head: list[str], rows: list[list[str]], numeric: set[int] | None = None, empty: str = "none") -> str:
    if not rows:
        return f"<p class='muted'>{esc(empty)}</p>"
    numeric = numeric or set()
    cells = "".join("<tr>" + "".join(f"<td class='n'>{c}</td>" if i in numeric else f"<td>{c}</td>"
                                     for i, c in enumerate(row)) + "</tr>" for row in rows)
    return "<table><tr>" + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr>" + cells + "</table>"


# ------------------------------------------------------------------ overview
def overview_rows(rows: list[dict[str, Any]], prefix: str) -> str:
    body = []
    for row in rows:
        if row.get("error"):
            body.append([f"<a href='{prefix}plans/{esc(row['plan'])}'>{esc(row['plan'])}</a>",
                         f"<span class='bad'>{esc(row['error'])}</span>", "", "", "", "", "", "", esc(row["stage"])])
            continue
        problems = row["problems"]
        body.append([
            f"<a href='{prefix}plans/{esc(row['plan'])}'>{esc(row['plan'])}</a>",
            esc(row["flow_state"]), count(len(row["engines"])), count(row["lag"], "records"),
            duration((row["lag_ms"] or 0) / 1000), count(row["records_per_s"], "records/s"),
            duration(row["eta_s"]),
            f"<span class='bad'>{esc(problems[0])}</span>" if problems else "<span class='muted'>none</span>",
            esc(row["stage"]),
        ])
    return table(["plan", "flow", "live engines", "lag", "behind by", "copy rate", "ETA to lag 0", "last error",
                  "latest run"], body, numeric={2, 3, 5}, empty="no migration plans")


# ------------------------------------------------------------------ one migration
def totals_cards(snapshot: dict[str, Any]) -> str:
    stopped = snapshot["stopped_partitions"]
    cards = [("flow", esc(snapshot["flow_state"])), ("live engines", count(len(snapshot["engines"]))),
             ("lag", count(snapshot["lag"], "records")), ("behind by", duration((snapshot["lag_ms"] or 0) / 1000)),
             ("copy rate", count(snapshot["records_per_s"], "records/s")),
             ("ETA to lag 0", duration(snapshot["eta_s"])),
             ("stopped partitions", f"<span class='{'bad' if stopped else 'ok'}'>{stopped}</span>")]
    problems = "".join(f"<p class='bad'>{esc(p)}</p>" for p in snapshot["problems"])
    return "<div class='cards'>" + "".join(f"<div class='card'>{k}<b>{v}</b></div>" for k, v in cards) + \
        "</div>" + problems + f"<p class='muted'>as of <span data-ms='{snapshot['at_ms']}'></span></p>"


def partitions_table(snapshot: dict[str, Any]) -> str:
    rows = []
    for row in snapshot["partitions"]:
        name = f"{esc(row['topic'])}[{row['partition']}]"
        rows.append([
            f"<span class='bad'>{name}</span>" if row["stopped"] else name,
            count(row["source_end"]), count(row["copied"]), count(row["lag"], "records"),
            duration((row["lag_ms"] or 0) / 1000), count(row["latency_ms"], "ms"),
            count(row["records_per_s"], "records/s"), duration(row["eta_s"]),
            f"<span class='bad'>{esc(row['stopped'])}</span>" if row["stopped"] else "",
        ])
    return table(["partition", "source end", "copied to", "lag", "behind by", "latency", "rate", "ETA", "stopped"],
                 rows, numeric={1, 2, 3, 5, 6}, empty="no partitions to copy")


def backfills_table(snapshot: dict[str, Any]) -> str:
    rows = [[f"{esc(b['topic'])}[{b['partition']}]", esc(b["state"]), count(b["copied"]),
             count(b["snapshot_offset"])] for b in snapshot["backfills"]]
    return table(["partition", "backfill", "copied to", "snapshot offset"], rows, numeric={2, 3},
                 empty="no partition held for a backfill")


def checkpoints_table(snapshot: dict[str, Any]) -> str:
    now_ms = snapshot["at_ms"]
    rows = [[esc(c["group"]), count(c["partitions"]), f"<span data-ms='{c['newest_ms']}'></span>",
             duration((now_ms - c["oldest_ms"]) / 1000)] for c in snapshot["checkpoints"]]
    return table(["group", "partitions", "newest checkpoint", "oldest partition's checkpoint age"], rows,
                 numeric={1}, empty="no checkpoints written yet")


def history_chart(history: list[dict[str, float]], width: int = 720, height: int = 180) -> str:
    """Lag (records, left axis, solid) and copy rate (records/s, right axis, dashed) over the last hour."""
    if len(history) < 2:
        return "<p class='muted'>the chart fills as engines report (every status interval)</p>"
    t0, t1 = history[0]["t_ms"], history[-1]["t_ms"]
    span = max(t1 - t0, 1)
    top_lag = max(max(p["lag"] for p in history), 1)
    top_rate = max(max(p["records_per_s"] for p in history), 1)

    def line(key: str, top: float) -> str:
        return " ".join(f"{40 + (p['t_ms'] - t0) / span * (width - 80):.1f},"
                        f"{height - 20 - p[key] / top * (height - 40):.1f}" for p in history)

    return (f"<svg width='{width}' height='{height}' role='img' aria-label='lag and copy rate over the last hour'>"
            f"<rect x='40' y='20' width='{width - 80}' height='{height - 40}' fill='#f7fafc'/>"
            f"<polyline fill='none' stroke='#2b6cb0' stroke-width='2' points='{line('lag', top_lag)}'/>"
            f"<polyline fill='none' stroke='#38a169' stroke-width='2' stroke-dasharray='5,3' "
            f"points='{line('records_per_s', top_rate)}'/>"
            f"<text x='40' y='14' font-size='11' fill='#2b6cb0'>lag, up to {count(top_lag, 'records')}</text>"
            f"<text x='{width - 40}' y='14' font-size='11' fill='#38a169' text-anchor='end'>copy rate, up to "
            f"{count(top_rate, 'records/s')}</text>"
            f"<text x='40' y='{height - 4}' font-size='11' fill='#718096' data-ms='{t0}'></text>"
            f"<text x='{width - 40}' y='{height - 4}' font-size='11' fill='#718096' text-anchor='end' "
            f"data-ms='{t1}'></text></svg>")


def migration_parts(snapshot: dict[str, Any]) -> dict[str, str]:
    """The parts of the migration page that refresh by themselves (element id -> HTML)."""
    return {"totals": totals_cards(snapshot), "chart": history_chart(snapshot["history"]),
            "partitions": partitions_table(snapshot), "backfills": backfills_table(snapshot),
            "checkpoints": checkpoints_table(snapshot)}


def migration_page(snapshot: dict[str, Any], prefix: str) -> str:
    parts = migration_parts(snapshot)
    body = (f"<p>{esc(snapshot['source'])} → {esc(snapshot['target'])}</p><div id='totals'>{parts['totals']}</div>"
            f"<h2>Lag and copy rate, last hour</h2><div id='chart'>{parts['chart']}</div>"
            f"<h2>Partitions (stopped first)</h2><div id='partitions'>{parts['partitions']}</div>"
            f"<h2>Backfill</h2><div id='backfills'>{parts['backfills']}</div>"
            f"<h2>Checkpoints (MirrorMaker 2 format)</h2><div id='checkpoints'>{parts['checkpoints']}</div>")
    api = f"{prefix}api/plans/{snapshot['plan']}/parts"
    return page(f"Migration {snapshot['plan']}", body, nav=plan_nav(snapshot["plan"], prefix),
                script=f"refresh({json.dumps(api)}, ['totals', 'chart', 'partitions', 'backfills', 'checkpoints'], "
                       "3000);")


# ------------------------------------------------------------------ cutover
def cutover_page(cutover: dict[str, Any], prefix: str) -> str:
    sections = []
    for group in cutover["groups"]:
        report = group["report"]
        head = (f"<h2>Group {esc(group['group'])}: {esc(group['state'])}"
                + (f" <span class='muted'>(<span data-ms='{group['stored_ms']}'></span>)</span>"
                   if group["stored_ms"] else "") + "</h2>")
        if report is None:
            sections.append(head + "<p class='muted'>not switched yet</p>")
            continue
        verdict = "<span class='ok'>verified</span>" if report["ok"] else "<span class='bad'>NOT VERIFIED</span>"
        summary = (f"<p>{esc(report['direction'])}: {verdict}; waited {report['wait_empty_s']:,.1f} s for the group "
                   f"to stop and {report['wait_copied_s']:,.1f} s for the copy; committed after "
                   f"{report['committed_s']:,.2f} s, proven after {report['switch_s']:,.2f} s</p>")
        rows = [[esc(p["topic"]), str(p["partition"]), count(p["source_offset"]), esc(p["target_topic"]),
                 count(p["target_offset"]), count(p["lag_at_switch"], "records"), esc(p["before"]), esc(p["at"]),
                 "<span class='ok'>ok</span>" if p["proof"] == "ok" else f"<span class='bad'>{esc(p['proof'])}</span>"]
                for p in report["partitions"]]
        sections.append(head + summary + table(
            ["topic", "partition", "source offset", "target topic", "target offset", "lag at switch",
             "record before (source/target)", "record at (source/target)", "proof"], rows, numeric={1, 2, 4, 5}))
    topics = [[esc(t["topic"]), esc(t["state"]),
               " ".join(f"[{p}] {count(end)}" for p, end in sorted((t["report"] or {}).get("end_offsets", {}).items()))
               or NONE] for t in cutover["topics"]]
    body = "".join(sections) or "<p class='muted'>the plan names no groups</p>"
    body += "<h2>Producers</h2>" + table(["topic", "producers", "source end offsets at the switch"], topics,
                                         empty="no topic's producers switched yet")
    return page(f"Cutover of {cutover['plan']}", body, nav=plan_nav(cutover["plan"], prefix))


# ------------------------------------------------------------------ validation
def validations_page(plan: str, records: list[dict[str, Any]], prefix: str, chosen: str | None) -> str:
    listing = [[f"<a href='{prefix}plans/{esc(plan)}/validations/{esc(r['name'])}'>{esc(r['name'])}</a>",
                f"<span data-ms='{r['stored_ms']}'></span>",
                "<span class='ok'>clean</span>" if r["report"]["clean"] else "<span class='bad'>NOT CLEAN</span>",
                esc(r["report"].get("mode", "")),
                count(r["report"]["totals"]["source_records"]),
                count(sum(r["report"]["totals"][k] for k in ("missing", "extra", "duplicates", "changed",
                                                             "out_of_order")))] for r in records]
    body = table(["report", "stored", "result", "mode", "source records", "problems"], listing, numeric={4, 5},
                 empty="no validation report stored yet")
    shown = next((r for r in records if r["name"] == chosen), records[0] if records else None)
    if shown is not None:
        report = shown["report"]
        body += (f"<h2>Report {esc(shown['name'])}: "
                 + ("<span class='ok'>clean</span>" if report["clean"] else "<span class='bad'>NOT CLEAN</span>")
                 + "</h2>" + render_validation_section(report))
        if report.get("truncated"):
            body += f"<p class='muted'>cut to fit the store: {esc(report['truncated'])}</p>"
    return page(f"Validation of {plan}", body, nav=plan_nav(plan, prefix))
