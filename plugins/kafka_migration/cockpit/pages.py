"""HTML of the cockpit's pages: plain server-rendered HTML and SVG (no third-party script), read by people.

Numbers carry units and thousands separators; times are rendered by the browser in the timezone chosen in
Airflow's UI (`data-ms` attributes); the page follows Airflow's light or dark theme, refreshes its `main`
element in place (scroll positions kept), and keeps wide tables scrolling within the frame; red marks only what
is wrong. The migration pages are in `migration_pages.py`.
"""

from __future__ import annotations

import html
from typing import Any

from mirror_engine.observe import duration as _duration
from mirror_engine.observe import render_validation_section

STYLE = """
:root { --fg: #1a202c; --bg: #ffffff; --muted: #5a677d; --line: #e2e8f0; --head: #f4f6f9; --bad: #c53030;
        --ok: #276749; --lag: #2b6cb0; --rate: #2f855a; --write: #b7791f; color-scheme: light; }
:root[data-theme=dark] { --fg: #e2e8f0; --bg: #101114; --muted: #a0aec0; --line: #2d3748; --head: #1a1d23;
        --bad: #fc8181; --ok: #68d391; --lag: #63b3ed; --rate: #68d391; --write: #f6ad55; color-scheme: dark; }
body { font-family: system-ui, sans-serif; margin: 1.2rem; color: var(--fg); background: var(--bg); }
a { color: var(--lag); }
h1 { font-size: 1.4rem; margin: 0 0 .4rem; } h2 { font-size: 1.1rem; margin: 1.4rem 0 .4rem; }
nav a { margin-right: 1rem; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; margin: .4rem 0; }
td, th { padding: .25rem .6rem; border-bottom: 1px solid var(--line); white-space: nowrap; }
td.wrap { white-space: normal; min-width: 16rem; } [data-ms] { white-space: nowrap; }
th { text-align: left; background: var(--head); } td.n { text-align: right; font-variant-numeric: tabular-nums; }
.bad { color: var(--bad); font-weight: 600; } .ok { color: var(--ok); } .muted { color: var(--muted); }
.cards { display: flex; gap: 1rem; flex-wrap: wrap; } .card { border: 1px solid var(--line); padding: .5rem .9rem; }
.card b { display: block; font-size: 1.3rem; }
.strip { border-left: 4px solid var(--lag); background: var(--head); padding: .5rem .9rem; margin: .6rem 0; }
.strip p { margin: .2rem 0; } .strip.failed { border-color: var(--bad); }
.error { border-left: 4px solid var(--bad); background: var(--head); padding: .8rem 1rem; max-width: 60rem; }
.charts { display: flex; gap: 1.5rem; flex-wrap: wrap; } svg text { fill: var(--muted); font-size: 11px; }
svg .grid { stroke: var(--line); } svg .lag { stroke: var(--lag); } svg .rate { stroke: var(--rate); }
svg .write { stroke: var(--write); } svg text.lag { fill: var(--lag); } svg text.rate { fill: var(--rate); }
svg text.write { fill: var(--write); }
.pager a, .pager span { margin-right: .8rem; }
"""

# Times in the timezone chosen in Airflow's UI (its `timezone` setting in local storage, the browser's when none),
# the theme of the Airflow frame around the page, and the refresh of `main` in place.
SCRIPT = """
function airflowTimezone() {
  try { var v = localStorage.getItem('timezone');
        if (v) { try { v = JSON.parse(v); } catch (e) {} if (v) { return v; } } }
  catch (e) {}
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}
function formatter(options) {
  try { return new Intl.DateTimeFormat('en-CA', Object.assign({timeZone: airflowTimezone(), hour12: false}, options)); }
  catch (e) { return new Intl.DateTimeFormat('en-CA', Object.assign({hour12: false}, options)); }
}
function fmtTimes(root) {
  var full = formatter({year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit',
                        second: '2-digit', timeZoneName: 'short'});
  var short = formatter({hour: '2-digit', minute: '2-digit'});
  root.querySelectorAll('[data-ms]').forEach(function (el) {
    var ms = Number(el.getAttribute('data-ms')); if (ms > 0) { el.textContent = full.format(new Date(ms)); } });
  root.querySelectorAll('[data-hm]').forEach(function (el) {
    var ms = Number(el.getAttribute('data-hm')); if (ms > 0) { el.textContent = short.format(new Date(ms)); } });
}
function refreshEvery(everyMs) {
  setInterval(function () {
    var main = document.getElementById('main'); var active = document.activeElement;
    if (!main || (active && active.tagName === 'INPUT' && main.contains(active))) { return; }
    fetch(location.href, {credentials: 'same-origin'}).then(function (r) { return r.text(); }).then(function (text) {
      var fresh = new DOMParser().parseFromString(text, 'text/html').getElementById('main');
      if (!fresh) { return; }
      var lefts = Array.prototype.map.call(main.querySelectorAll('.scroll'), function (el) { return el.scrollLeft; });
      var x = window.scrollX, y = window.scrollY;
      main.innerHTML = fresh.innerHTML; fmtTimes(main);
      main.querySelectorAll('.scroll').forEach(function (el, i) { if (lefts[i]) { el.scrollLeft = lefts[i]; } });
      window.scrollTo(x, y);
    }).catch(function () {});
  }, everyMs);
}
try { new MutationObserver(applyTheme).observe(window.parent.document.documentElement, {attributes: true}); }
catch (e) {}
window.addEventListener('storage', function () { applyTheme(); fmtTimes(document); });
fmtTimes(document);
"""

# In the head, so a dark page never flashes white.
THEME_SCRIPT = """
function applyTheme() {
  var theme = '';
  try { var frame = window.parent.document.documentElement;
        if (frame !== document.documentElement) {
          theme = frame.classList.contains('dark') ? 'dark' : (frame.classList.contains('light') ? 'light' : ''); } }
  catch (e) {}
  if (!theme) { try { var v = localStorage.getItem('theme'); if (v === 'dark' || v === 'light') { theme = v; } }
                catch (e) {} }
  if (!theme) { theme = window.matchMedia && matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light'; }
  document.documentElement.setAttribute('data-theme', theme);
}
applyTheme();
"""

REFRESH_MS = 3000
NONE = "&ndash;"  # no value


def esc(value: object) -> str:
    return html.escape(str(value))


def count(value: float | None, unit: str = "") -> str:
    if value is None:
        return NONE
    text = f"{value:,.0f}" if abs(value) >= 10 or float(value).is_integer() else f"{value:,.1f}"
    return f"{text} {unit}".strip()


def duration(seconds: float | None) -> str:
    """Seconds as s / min / h (`mirror_engine.observe.duration`); a dash for none."""
    return _duration(seconds) or NONE


def page(title: str, body: str, *, nav: str = "", refresh_ms: int = REFRESH_MS) -> str:
    """A whole page: its `main` element refreshes itself in place every `refresh_ms` (0: never)."""
    refresh = f"refreshEvery({refresh_ms});" if refresh_ms else ""
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(title)}</title><style>{STYLE}</style>"
            f"<script>{THEME_SCRIPT}</script></head><body><nav>{nav}</nav><h1>{esc(title)}</h1>"
            f"<main id='main'>{body}</main><script>{SCRIPT}{refresh}</script></body></html>")


def error_page(title: str, sentence: str, prefix: str, plan: str | None = None) -> str:
    """A page that could not be built: why, and what to do, in a sentence; it retries at each refresh."""
    return page(title, f"<div class='error'><p>{esc(sentence)}</p></div>",
                nav=plan_nav(plan, prefix) if plan else f"<a href='{prefix}'>All migrations</a>", refresh_ms=5000)


def plan_nav(plan: str, prefix: str) -> str:
    p = esc(plan)
    return (f"<a href='{prefix}'>All migrations</a><a href='{prefix}plans/{p}'>Migration {p}</a>"
            f"<a href='{prefix}plans/{p}/cutover'>Cutover</a><a href='{prefix}plans/{p}/validations'>Validation</a>")


def flow_arrow(source: str, target: str) -> str:
    """The flow's direction as every page writes it."""
    return f"{esc(source)} &rarr; {esc(target)}"


def table(head: list[str], rows: list[list[str]], numeric: set[int] | None = None, empty: str = "none",
          wrap: set[int] | None = None) -> str:
    """A table in a box that scrolls sideways within the frame; cells stay on one line but for `wrap` columns."""
    if not rows:
        return f"<p class='muted'>{esc(empty)}</p>"
    numeric, wrap = numeric or set(), wrap or set()

    def cell(i: int, c: str) -> str:
        return f"<td class='n'>{c}</td>" if i in numeric else (f"<td class='wrap'>{c}</td>" if i in wrap else
                                                               f"<td>{c}</td>")

    cells = "".join("<tr>" + "".join(cell(i, c) for i, c in enumerate(row)) + "</tr>" for row in rows)
    return ("<div class='scroll'><table><tr>" + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr>" + cells
            + "</table></div>")


# ------------------------------------------------------------------ overview
def overview_rows(rows: list[dict[str, Any]], prefix: str) -> str:
    body = []
    for row in rows:
        link = f"<a href='{prefix}plans/{esc(row['plan'])}'>{esc(row['plan'])}</a>"
        if row.get("error"):
            body.append([link, "<span class='bad'>unavailable</span>", "", "", "", "", "",
                         f"<span class='bad'>{esc(row['error'])}</span>", esc(row["stage"])])
            continue
        problems = row["problems"]
        body.append([
            link, esc(row["flow_state"]), count(len(row["engines"])), count(row["lag"], "records"),
            duration((row["lag_ms"] or 0) / 1000), count(row["records_per_s"], "records/s"), esc(row["eta"]),
            f"<span class='bad'>{esc(problems[0])}</span>" if problems else "<span class='muted'>none</span>",
            esc(row["stage"]),
        ])
    return table(["plan", "flow", "live engines", "lag", "behind by", "copy rate", "ETA to lag 0", "last error",
                  "latest run"], body, numeric={2, 3, 5}, empty="no migration plans", wrap={7})


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
