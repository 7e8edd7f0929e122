"""The flow's report store on the target: any reader sees what a writer stored, bounded in size and count."""

from __future__ import annotations

import json

import pytest

from mirror_engine.observe import MAX_REPORT_BYTES, ReportStore, bounded
from mirror_engine.observe.testing import reports
from tests.integration.plans import make_plan

pytestmark = [pytest.mark.integration]


def test_a_report_stored_by_one_component_is_read_by_another(kafka_pair, unique_name, monkeypatch):
    source, target = kafka_pair
    plan = make_plan(source, target, unique_name, name=f"reports{unique_name[-8:]}")
    writer, reader = ReportStore(plan, target.client_config()), ReportStore(plan, target.client_config())
    try:
        writer.put("group-switch", "billing", {"group": "billing", "ok": True, "partitions": [{"p": 0}]})
        assert reader.read()["group-switch:billing"]["report"] == {"group": "billing", "ok": True,
                                                                  "partitions": [{"p": 0}]}
        # The same key replaces its report (a rollback after a switch); the reader reads only what is new.
        writer.put("group-switch", "billing", {"group": "billing", "ok": True, "direction": "tgt->src"})
        assert reader.read("group-switch")["group-switch:billing"]["report"]["direction"] == "tgt->src"

        # Only the newest reports of a kind are kept: older keys get tombstones.
        monkeypatch.setattr(reports, "KEEP_PER_KIND", 3)
        for run in range(5):
            writer.put("validation", f"run-{run}", {"clean": True, "run": run})
        assert [r["name"] for r in reader.newest("validation")] == ["run-4", "run-3", "run-2"]
        assert "group-switch:billing" in reader.read()  # other kinds are not touched
        # A group's switch report is its proof, read again by a retried switch: every group's is kept, however
        # many groups a migration switches (one key per group, replaced by its rollback's).
        for group in range(5):
            writer.put("group-switch", f"app-{group}", {"group": f"app-{group}", "ok": True})
        assert len(reader.read("group-switch")) == 6

        # A report too large for a record is cut to fit, and says what was cut.
        huge = {"clean": False, "partitions": [{"partition": i, "missing": "x" * 100} for i in range(20_000)]}
        writer.put("validation", "huge", huge)
        stored = ReportStore(plan, target.client_config()).read()["validation:huge"]["report"]
        assert stored["truncated"] == {"partitions": 20_000} and 0 < len(stored["partitions"]) < 20_000
        assert len(json.dumps(stored)) <= MAX_REPORT_BYTES
    finally:
        writer.close()
        reader.close()


def test_bounded_keeps_a_small_report_as_it_is():
    report = {"clean": True, "partitions": [{"partition": 0}]}
    assert bounded(report) is report
    with pytest.raises(ValueError, match="report kind"):
        ReportStore.put(ReportStore.__new__(ReportStore), "nonsense", "x", {})


def test_the_cockpit_sees_a_group_fenced_on_the_source_before_its_switch(secured_pair, kafka_pair, unique_name):
    from mirror_engine.cutover import GroupSwitcher
    from mirror_engine.observe import FlowView

    for (source, target), fenced in ((secured_pair, True), (kafka_pair, False)):
        group = f"{unique_name}-app"
        plan = make_plan(source, target, unique_name, name=f"fence{unique_name[-8:]}", cutover={"groups": [group]})
        if fenced:
            GroupSwitcher(plan, source.client_config(), target.client_config()).fence(group)
        view = FlowView(plan, source.client_config(), target.client_config())
        try:
            row = next(row for row in view.cutover()["groups"] if row["group"] == group)
        finally:
            view.close()
        # A cluster without an authorizer has no fences: the group simply has not started.
        assert row["state"] == ("fenced on the source, not switched yet" if fenced else "not started"), row
        assert row["report"] is None
