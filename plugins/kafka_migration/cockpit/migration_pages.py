"""HTML of a migration's pages: the live migration page, the run status strip, a run's own page and the
cutover page. Every number comes from the plan's `FlowView` snapshot or a stored report, computed once in
`mirror_engine.observe` (the cards, the charts and the tables read the same fields)."""

from __future__ import annotations

import math
from typing import Any
from urllib.parse import urlencode

from kafka_migration.cockpit.pages import NONE, count, duration, esc, flow_arrow, page, plan_nav, table
from kafka_migration.cockpit.runs import ACTIVE, RunRecord
from kafka_migration.plan_dags import migration_dag_id


# ------------------------------------------------------------------ status strip
def status_strip(plan: str, run: RunRecord | None, sentences: list[str], prefix: str, *, this_run: bool = False,
                 dag_id: str | None = None) -> str:
    """Where the run stands and why it waits: its stage now, and each wait's sentence against the live value.
    `dag_id`: the DAG whose runs move the plan's flow (default its migration DAG)."""
    if run is None:
        return (f"<div class='strip' id='strip'><p>No migration run yet: trigger the DAG "
                f"<b>{esc(dag_id or migration_dag_id(plan))}</b> to start one.</p></div>")
    link = esc(run.run_id) if this_run else f"<a href='{prefix}runs/{esc(run.dag_id)}/{esc(run.run_id)}'>" \
                                            f"{esc(run.run_id)}</a>"
    lines = []
    if run.state in ("running", "queued"):
        current = ", ".join(run.current) or "between tasks"
        lines.append(f"<p><b>Run {link}</b> {esc(run.state)} since <span data-ms='{run.start_ms or 0}'></span>"
                     f" ({duration(_since_s(run.start_ms))}); stage now: <b>{esc(current)}</b></p>")
        lines += [f"<p>Waiting: {esc(sentence)}</p>" for sentence in sentences]
        asking = [task["task"] for stage in run.stages for task in stage.tasks if task["state"] == "awaiting_input"]
        if asking:
            lines.append(f"<p><b>Waiting for a person</b>: {esc(', '.join(asking))} asks for an approval of the "
                         "switch; approve or reject it under Browse &gt; Required Actions</p>")
        running = [task["task"] for stage in run.stages for task in stage.tasks if task["state"] == "running"]
        if running:
            lines.append(f"<p class='muted'>running: {esc(', '.join(running))}</p>")
    else:
        took = duration((run.end_ms - run.start_ms) / 1000) if run.end_ms and run.start_ms else NONE
        failed = [stage.name for stage in run.stages if stage.state == "failed"]
        not_run = [stage.name for stage in run.stages if stage.state == "upstream_failed"]
        lines.append(f"<p><b>{'Run' if this_run else 'Latest run'} {link}</b>: "
                     f"<span class='{'bad' if run.state == 'failed' else 'ok'}'>{esc(run.state)}</span>, ended "
                     f"<span data-ms='{run.end_ms or 0}'></span> after {took}"
                     + (f"; failed in {esc(', '.join(failed))} (see its task logs)" if failed else "")
                     + (f"; not run because of it: {esc(', '.join(not_run))}" if not_run else "") + "</p>")
    return f"<div class='strip{' failed' if run.state == 'failed' else ''}' id='strip'>{''.join(lines)}</div>"


def _since_s(start_ms: int | None) -> float | None:
    import time

    return None if start_ms is None else time.time() - start_ms / 1000


# ------------------------------------------------------------------ live migration page
def totals_cards(snapshot: dict[str, Any]) -> str:
    stopped = snapshot["stopped_partitions"]
    state = snapshot["flow_state"]
    cards = [("flow", f"<span class='{'bad' if state == 'no engine running' else ''}'>{esc(state)}</span>"),
             ("live engines", count(len(snapshot["engines"]))),
             ("lag", count(snapshot["lag"], "records")), ("behind by", duration((snapshot["lag_ms"] or 0) / 1000)),
             ("copy rate", count(snapshot["records_per_s"], "records/s")),
             ("source written at", count(snapshot["write_rate"], "records/s")),
             ("ETA to lag 0", esc(snapshot["eta"])),
             ("stopped partitions", f"<span class='{'bad' if stopped else 'ok'}'>{stopped}</span>")]
    problems = "".join(f"<p class='bad'>{esc(p)}</p>" for p in snapshot["problems"])
    return ("<div class='cards'>" + "".join(f"<div class='card'>{k}<b>{v}</b></div>" for k, v in cards)
            + "</div>" + problems + f"<p class='muted'>as of <span data-ms='{snapshot['at_ms']}'></span>; rates and "
            "ETA over the last minute (ETA from the net drain: copy rate minus the source's write rate)</p>")


def _nice_top(value: float) -> float:
    """The smallest 1, 2 or 5 times a power of ten at or above `value` (an axis' top)."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    return next(step * power for step in (1, 2, 5, 10) if step * power >= value)


def line_chart(history: list[dict[str, float]], series: list[tuple[str, str, str]], unit: str, label: str,
               width: int = 460, height: int = 170) -> str:
    """One chart: each (key, css class, name) a line, on one y-axis of `unit` with ticks, times on the x-axis."""
    left, right, top_pad, bottom = 64, 12, 22, 24
    t0, t1 = history[0]["t_ms"], history[-1]["t_ms"]
    span = max(t1 - t0, 1)
    # A point may lack a series (None: the points drawn from the engines' status have no source write rate).
    top = _nice_top(max([p[key] for p in history for key, _c, _n in series if p[key] is not None] or [0]))
    plot_h, plot_w = height - top_pad - bottom, width - left - right

    def y(value: float) -> float:
        return top_pad + plot_h - value / top * plot_h

    parts = [f"<svg width='{width}' height='{height}' role='img' aria-label='{esc(label)}'>"]
    for tick in (0, top / 2, top):
        parts.append(f"<line class='grid' x1='{left}' x2='{width - right}' y1='{y(tick):.1f}' y2='{y(tick):.1f}'/>"
                     f"<text x='{left - 6}' y='{y(tick) + 4:.1f}' text-anchor='end'>{count(tick)}</text>")
    for i, (t, anchor) in enumerate(((t0, "start"), ((t0 + t1) / 2, "middle"), (t1, "end"))):
        x = left + i * plot_w / 2
        parts.append(f"<text x='{x:.1f}' y='{height - 6}' text-anchor='{anchor}' data-hm='{int(t)}'></text>")
    legend_x = left
    for key, css, name in series:
        points = " ".join(f"{left + (p['t_ms'] - t0) / span * plot_w:.1f},{y(p[key]):.1f}" for p in history
                          if p[key] is not None)
        parts.append(f"<polyline fill='none' class='{css}' stroke-width='2' points='{points}'/>"
                     f"<text class='{css}' x='{legend_x}' y='12'>{esc(name)} ({esc(unit)})</text>")
        legend_x += 9 * len(name) + 40
    return "".join(parts) + "</svg>"


def history_charts(history: list[dict[str, float]]) -> str:
    """Lag (records) and the rates (records/s) on separate charts with their own axes, from the view's samples."""
    if len(history) < 2:
        return "<p class='muted'>the charts fill as the cockpit samples the flow (a point every 10 s)</p>"
    return ("<div class='charts'>"
            + line_chart(history, [("lag", "lag", "lag")], "records", "lag in records over time")
            + line_chart(history, [("records_per_s", "rate", "copy rate"), ("write_rate", "write", "source writes")],
                         "records/s", "copy rate and the source's write rate over time")
            + f"</div><p class='muted'>since <span data-ms='{history[0]['t_ms']}'></span> (the last hour at most; "
            "before the cockpit began watching, from the engines' own status)</p>")


def partitions_section(snapshot: dict[str, Any], prefix: str) -> str:
    """The snapshot's page of partitions (`FlowView.page_of`: stopped and most behind first), with a filter and
    page links."""
    rows, shown, pages, contains = snapshot["partitions"], snapshot["page"], snapshot["pages"], snapshot["filter"]
    body = []
    for row in rows:
        name = f"{esc(row['topic'])}[{row['partition']}]"
        body.append([
            f"<span class='bad'>{name}</span>" if row["stopped"] else name,
            count(row["source_end"]), count(row["copied"]), count(row["lag"], "records"),
            duration((row["lag_ms"] or 0) / 1000) if row["lag"] else NONE,
            duration(row["latency_ms"] / 1000) if row["latency_ms"] is not None else "",
            count(row["records_per_s"], "records/s"),
            f"<span class='bad'>{esc(row['stopped'])}</span>" if row["stopped"] else "",
        ])
    base = f"{prefix}plans/{esc(snapshot['plan'])}"

    def link(n: int) -> str:
        return f"{base}?{urlencode({'page': n, 'q': contains} if contains else {'page': n})}"

    pager = [f"<span>page {shown} of {pages} ({snapshot['partition_count']:,} partitions)</span>"]
    if shown > 1:
        pager.append(f"<a href='{link(shown - 1)}'>previous</a>")
    if shown < pages:
        pager.append(f"<a href='{link(shown + 1)}'>next</a>")
    search = (f"<form method='get' action='{base}'><input name='q' value='{esc(contains)}' "
              "placeholder='topic or topic[partition]'> <button>filter</button></form>")
    return (search + f"<p class='pager'>{''.join(pager)}</p>"
            + table(["partition", "source end", "copied to", "lag", "behind by", "latency", "copy rate", "stopped"],
                    body, numeric={1, 2, 3, 6}, empty="no partitions to copy" if not contains else "none matches"))


def _more(shown: int, total: int, what: str) -> str:
    return f"<p class='muted'>{shown:,} of {total:,} {what} shown</p>" if total > shown else ""


def backfills_table(snapshot: dict[str, Any]) -> str:
    rows = [[f"{esc(b['topic'])}[{b['partition']}]", esc(b["state"]), count(b["copied"]),
             count(b["snapshot_offset"])] for b in snapshot["backfills"]]
    return table(["partition", "backfill", "copied to", "snapshot offset"], rows, numeric={2, 3},
                 empty="no partition held for a backfill") + _more(len(rows), snapshot["backfill_partitions"],
                                                                  "partitions held for a backfill")


def checkpoints_table(snapshot: dict[str, Any]) -> str:
    """The groups whose newest checkpoint is the oldest first (`FlowView.page_of` keeps a page of them)."""
    now_ms = snapshot["at_ms"]
    rows = [[esc(c["group"]), count(c["partitions"]), f"<span data-ms='{c['newest_ms']}'></span>",
             duration((now_ms - c["oldest_ms"]) / 1000)] for c in snapshot["checkpoints"]]
    return table(["group", "partitions", "newest checkpoint", "oldest partition's checkpoint age"], rows,
                 numeric={1}, empty="no checkpoints written yet") + _more(
        len(rows), snapshot["checkpoint_groups"], "groups (those checkpointed longest ago first)") + (
        "<p class='muted'>A group's checkpoint is written when its position moves, as MirrorMaker 2 writes them: a "
        "group that reads nothing keeps its last one, which ages.</p>" if rows else "")


def migration_page(snapshot: dict[str, Any], strip: str, prefix: str) -> str:
    """The live page of a plan from `FlowView.page_of(snapshot, page, filter)`: bounded whatever the plan's size."""
    body = (strip + f"<p>{flow_arrow(snapshot['source'], snapshot['target'])}</p>"
            f"<div id='totals'>{totals_cards(snapshot)}</div>"
            f"<h2>Lag and rates</h2><div id='chart'>{history_charts(snapshot['history'])}</div>"
            f"<h2>Partitions (stopped, then most behind, first)</h2>"
            f"<div id='partitions'>{partitions_section(snapshot, prefix)}</div>"
            f"<h2>Backfill</h2><div id='backfills'>{backfills_table(snapshot)}</div>"
            f"<h2>Checkpoints (MirrorMaker 2 format)</h2><div id='checkpoints'>{checkpoints_table(snapshot)}</div>")
    if snapshot.get("schemas") is not None:
        body += f"<h2>Schemas</h2><div id='schemas'>{schemas_section(snapshot['schemas'])}</div>"
    return page(f"Migration {snapshot['plan']}", body, nav=plan_nav(snapshot["plan"], prefix))


def schemas_section(moved: dict[str, Any]) -> str:
    """The last move of the plan's subjects to the target registry: counts, the subjects it could not move, and
    the ids (source id -> target id) it shows."""
    summary = (f"<p>{count(moved['subjects'])} subject(s), {count(moved['versions'])} version(s) on the target "
               f"registry; {count(moved['ids_total'])} schema id(s), {count(moved['translated'])} of them "
               "translated.</p>")
    refused = "".join(f"<p class='problem'>{esc(sentence)}</p>" for sentence in moved["refused"])
    rows = [[count(source), count(target)] for source, target in moved["ids"]]
    return summary + refused + table(["source id", "target id"], rows, numeric={0, 1}, empty="no schema id") \
        + _more(len(rows), moved["ids_total"], "schema ids")


# ------------------------------------------------------------------ cutover
def _direction(direction: str) -> str:
    source, _, target = direction.partition("->")
    return flow_arrow(source, target)


def group_reports(groups: list[dict[str, Any]], prefix: str, plan: str) -> str:
    sections = []
    for group in groups:
        report = group["report"]
        head = (f"<h2>Group {esc(group['group'])}: {esc(group['state'])}"
                + (f" <span class='muted'>(<span data-ms='{group['stored_ms']}'></span>)</span>"
                   if group["stored_ms"] else "") + "</h2>")
        if report is None:
            css = "muted" if group["state"] == "skipped" else "bad"
            sections.append(head + (f"<p class='{css} reason'>{esc(group['reason'])}</p>" if group.get("reason")
                                    else "<p class='muted'>not switched yet</p>"))
            continue
        verdict = "<span class='ok'>verified</span>" if report["ok"] else "<span class='bad'>NOT VERIFIED</span>"
        summary = (f"<p>{_direction(report['direction'])}: {verdict}; waited {duration(report['wait_empty_s'])} for "
                   f"the group to stop and {duration(report['wait_copied_s'])} for the copy; committed after "
                   f"{duration(report['committed_s'])}, proven after {duration(report['switch_s'])}</p>")
        rows = [[f"{esc(p['topic'])}[{p['partition']}]" + (f" &rarr; {esc(p['target_topic'])}"
                                                            if p["target_topic"] != p["topic"] else ""),
                 "<span class='ok'>ok</span>" if p["proof"] == "ok" else f"<span class='bad'>{esc(p['proof'])}</span>",
                 count(p["source_offset"]), count(p["target_offset"]), count(p["lag_at_switch"], "records"),
                 esc(p["before"]), esc(p["at"])] for p in report["partitions"]]
        sections.append(head + summary + table(
            ["partition (target topic if renamed)", "proof", "source offset", "target offset",
             "group's consumer lag", "record before (source/target)", "record at (source/target)"], rows,
            numeric={2, 3, 4}, wrap={1}))
    return "".join(sections) or "<p class='muted'>the plan names no groups</p>"


def producer_table(topics: list[dict[str, Any]]) -> str:
    rows = [[esc(t["topic"]), esc(t["state"]),
             " ".join(f"[{p}] {count(end)}" for p, end in sorted((t["report"] or {}).get("end_offsets", {}).items()))
             or NONE] for t in topics]
    return table(["topic", "producers", "source end offsets at the switch"], rows,
                 empty="no producer switch recorded (a run switches the topics chosen in its form)")


def approvals(records: list[dict[str, Any]]) -> str:
    """Who approved (or rejected) a switch, and when."""
    lines = []
    for record in records[:3]:
        approval = record["report"]
        css = "ok" if approval["decision"] == "approved" else "bad"
        lines.append(f"<p>Switch <span class='{css}'>{esc(approval['decision'])}</span> by <b>{esc(approval['by'])}"
                     f"</b> at <span data-ms='{approval['at_ms']}'></span> (run {esc(approval['run_id'])})</p>")
    return "".join(lines)


GROUPS_PER_PAGE = 20  # groups whose reports one cutover page shows (each with a table of its partitions)


def _cutover_order(group: dict[str, Any]) -> tuple:
    """Not verified or refused first, then not switched yet, then the others, the newest report first, then by
    name."""
    report, refused = group["report"], bool(group.get("reason")) and group["state"] != "skipped"
    return (not refused and (report is None or report["ok"]), report is not None, -(group["stored_ms"] or 0),
            group["group"])


def cutover_page(cutover: dict[str, Any], prefix: str, page_no: int = 1) -> str:
    """Approvals, one page of groups (not verified, then not switched yet, first) with their reports, the
    producers."""
    groups = sorted(cutover["groups"], key=_cutover_order)
    pages = max(1, math.ceil(len(groups) / GROUPS_PER_PAGE))
    shown = min(max(1, page_no), pages)
    body = approvals(cutover.get("approvals") or [])
    if pages > 1:
        switched = sum(1 for g in groups if g["report"] is not None and g["report"]["ok"])
        base = f"{prefix}plans/{esc(cutover['plan'])}/cutover?page="
        links = [f"<span>groups page {shown} of {pages} ({len(groups):,} groups, {switched:,} switched and "
                 "verified; not verified and not switched yet first)</span>"]
        links += [f"<a href='{base}{shown - 1}'>previous</a>"] if shown > 1 else []
        links += [f"<a href='{base}{shown + 1}'>next</a>"] if shown < pages else []
        body += f"<p class='pager'>{''.join(links)}</p>"
    page_groups = groups[(shown - 1) * GROUPS_PER_PAGE:shown * GROUPS_PER_PAGE]
    body += group_reports(page_groups, prefix, cutover["plan"])
    body += "<h2>Producers</h2>" + producer_table(cutover["topics"])
    return page(f"Cutover of {cutover['plan']}", body, nav=plan_nav(cutover["plan"], prefix))


# ------------------------------------------------------------------ one run
def run_page(plan: str, run: RunRecord, strip: str, produced: dict[str, Any] | str, prefix: str) -> str:
    """A run's own tab: its stages and their times, the switch and validation reports it produced (stored
    between its start and end), and a link to the live plan page. `produced` is a sentence when unreadable."""
    rows = []
    for stage in run.stages:
        took = duration((stage.end_ms - stage.start_ms) / 1000) if stage.end_ms and stage.start_ms else NONE
        css = "bad" if stage.state in ("failed", "upstream_failed") else ("" if stage.state in ACTIVE else "muted")
        tasks = ", ".join(f"{t['task'].split('.', 1)[-1]} {t['state']}" for t in stage.tasks[:6])
        more = f" and {len(stage.tasks) - 6} more" if len(stage.tasks) > 6 else ""
        rows.append([esc(stage.name), f"<span class='{css}'>{esc(stage.state)}</span>",
                     f"<span data-ms='{stage.start_ms or 0}'></span>", f"<span data-ms='{stage.end_ms or 0}'></span>",
                     took, esc(tasks + more)])
    body = (strip + f"<p><a href='{prefix}plans/{esc(plan)}'>Live migration page of {esc(plan)}</a> (today's state"
            "; this page shows this run)</p><h2>Stages</h2>"
            + table(["stage", "state", "started", "ended", "took", "tasks"], rows, empty="no task ran yet"))
    if isinstance(produced, str):
        body += f"<h2>Reports of this run</h2><div class='error'><p>{esc(produced)}</p></div>"
    else:
        body += ("<h2>Switch reports of this run</h2>" + approvals(produced.get("approvals") or [])
                 + (_run_groups(produced["groups"], prefix, plan) if produced["groups"]
                    else "<p class='muted'>this run switched no group and stored no group's outcome</p>")
                 + "<h2>Producer switches of this run</h2>" + producer_table(produced["topics"])
                 + "<h2>Validation reports of this run</h2>"
                 + table(["report", "stored", "result"], [
                     [f"<a href='{prefix}plans/{esc(plan)}/validations/{esc(r['name'])}'>{esc(r['name'])}</a>",
                      f"<span data-ms='{r['stored_ms']}'></span>",
                      "<span class='ok'>clean</span>" if r["report"]["clean"] else "<span class='bad'>NOT CLEAN</span>"]
                     for r in produced["validations"]], empty="this run stored no validation report"))
    return page(f"Run {run.run_id}", body, nav=plan_nav(plan, prefix))


def _run_groups(groups: list[dict[str, Any]], prefix: str, plan: str) -> str:
    """A run's switch reports, one page of them (not verified first); the rest counted, on the cutover page."""
    shown = sorted(groups, key=_cutover_order)[:GROUPS_PER_PAGE]
    more = (f"<p class='muted'>{len(shown)} of the {len(groups):,} groups this run switched shown (not verified "
            f"first); <a href='{prefix}plans/{esc(plan)}/cutover'>every group on the cutover page</a></p>"
            if len(groups) > len(shown) else "")
    return more + group_reports(shown, prefix, plan)

