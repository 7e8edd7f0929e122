"""`make demo-ui` walked as a new user walks it, in Debian's chromium: its own start-up, the login, the migration's
trigger form with the approval on, the approval under Required Actions, the switch of both groups, the cockpit's
proofs, then Ctrl-C, after which no process of the demo is left."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

from tests.integration.airflow_services import REPORTS, logged_in_page

pytestmark = [pytest.mark.integration, pytest.mark.airflow]

ROOT = Path(__file__).resolve().parents[2]
DAG_ID = "kafka_migration__demo"


def _of_the_demo(home: Path, demo: psutil.Process | None = None) -> list[psutil.Process]:
    """Every process of the demo: its descendants (Airflow's components and workers, the clusters), and every
    process whose environment names the demo's Airflow home with its own descendants (the engine the replicate
    stage detached, no longer under the demo). Airflow retitles its workers, which hides their environment, so
    descendants are followed too."""
    found: dict[int, psutil.Process] = {}

    def add(process: psutil.Process) -> None:
        try:
            for one in [process, *process.children(recursive=True)]:
                found[one.pid] = one
        except psutil.Error:
            pass

    if demo is not None:
        add(demo)
        found.pop(demo.pid, None)
    for process in psutil.process_iter():
        try:
            if str(home) in process.environ().get("AIRFLOW_HOME", ""):
                add(process)
        except (psutil.Error, OSError):
            continue
    return list(found.values())


def _api(url: str, token: str, path: str) -> dict:
    request = urllib.request.Request(f"{url}/api/v2{path}", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def _token(url: str, user: str, password: str) -> str:
    request = urllib.request.Request(f"{url}/auth/token", method="POST", headers={"Content-Type": "application/json"},
                                     data=json.dumps({"username": user, "password": password}).encode())
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())["access_token"]


def _wait(what: str, timeout_s: float, condition):
    deadline = time.monotonic() + timeout_s
    while True:
        answer = condition()
        if answer:
            return answer
        assert time.monotonic() < deadline, f"not within {timeout_s:.0f} s: {what}"
        time.sleep(2)


def test_make_demo_ui_ends_green_from_the_form_through_the_approval_and_leaves_nothing_after_ctrl_c(tmp_path):
    REPORTS.mkdir(exist_ok=True)
    env = {**os.environ, "AIRFLOW_HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, str(ROOT / "demo" / "airflow_ui.py")], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True)
    shown: list[str] = []
    try:
        assert process.stdout is not None
        for line in process.stdout:
            shown.append(line)
            if "Ctrl-C stops" in line or "exited" in line:
                break
        printed = "".join(shown)
        match = re.search(r"Airflow UI: (\S+)\s+login: (\S+) / (\S+)", printed)
        assert match, printed
        url, user, password = match.groups()
        # A scheduled example plan (its clusters are not here) is left paused: no red run nobody started.
        assert "left paused, as they run on a schedule: kafka_migration__orders-to-new-dc" in printed, printed
        token = _token(url, user, password)
        assert _api(url, token, "/dags/kafka_migration__orders-to-new-dc")["is_paused"] is True
        assert _api(url, token, f"/dags/{DAG_ID}")["is_paused"] is False

        with logged_in_page(url, user, password) as page:
            # The trigger form, with the approval asked for: the switch found by its name, as assistive tools do.
            page.goto(f"{url}/dags/{DAG_ID}", wait_until="networkidle")
            page.get_by_role("button", name="Trigger Dag").click()
            dialog = page.get_by_role("dialog")
            dialog.get_by_text("Run Parameters").wait_for()
            approve = dialog.get_by_role("checkbox", name="Approve before the switch")
            approve.locator("xpath=..").click()  # its switch, as a person clicks it
            assert approve.is_checked()
            page.screenshot(path=str(REPORTS / "demo-ui-trigger-form.png"), full_page=True)
            dialog.get_by_role("button", name="Trigger", exact=True).click()
            run_id = _wait("the form's run", 60, lambda: [
                run["dag_run_id"] for run in _api(url, token, f"/dags/{DAG_ID}/dagRuns")["dag_runs"]])[0]

            def state_of(task_id: str) -> str:
                instances = _api(url, token, f"/dags/{DAG_ID}/dagRuns/{run_id}/taskInstances?limit=200")
                states = {ti["task_id"]: ti["state"] for ti in instances["task_instances"]}
                failed = [t for t, s in states.items() if s in ("failed", "upstream_failed")]
                assert not failed, f"failed before the approval: {failed}"
                return states.get(task_id) or ""

            _wait("the approval asked", 600, lambda: state_of("approve.switch") == "awaiting_input")
            detail = _api(url, token, f"/dags/{DAG_ID}/dagRuns/{run_id}/taskInstances/approve.switch/-1/"
                          "hitlDetails")
            # Before anyone approves: what happens to each group, said.
            assert "2 group(s) to switch: billing (" in detail["body"], detail["body"]
            assert " ago" not in detail["body"], detail["body"]
            time.sleep(8)  # as a person would, not within the second (apache/airflow#72716)
            page.goto(f"{url}/required_actions", wait_until="networkidle")
            page.get_by_role("link", name=re.compile(r"approve\.switch|^switch$")).first.click()
            page.get_by_role("button", name="Approve").wait_for()
            page.screenshot(path=str(REPORTS / "demo-ui-required-action.png"), full_page=True)
            page.get_by_role("button", name="Approve").click()
            # Answered: the page no longer offers the choice (Airflow's page keeps its buttons, disabled).
            _wait("the approval taken", 60, lambda: page.get_by_role("button", name="Approve").is_disabled())
            assert page.get_by_role("button", name="Reject").is_disabled()
            page.screenshot(path=str(REPORTS / "demo-ui-approved.png"), full_page=True)

            run = _wait("the run's end", 600, lambda: (lambda r: r if r["state"] in ("success", "failed")
                                                       else None)(
                _api(url, token, f"/dags/{DAG_ID}/dagRuns/{run_id}")))
            instances = _api(url, token, f"/dags/{DAG_ID}/dagRuns/{run_id}/taskInstances?limit=200")
            states = {ti["task_id"]: ti["state"] for ti in instances["task_instances"]}
            assert run["state"] == "success", states
            assert states["switch_groups.switch"] == "success" and states["switch_producers.switch"] == "success"

            # The cockpit, from the navigation's entry: both groups switched with their proofs.
            page.goto(f"{url}/", wait_until="networkidle")
            page.get_by_role("link", name="Migrations").first.click()
            page.wait_for_url(re.compile(r"/plugin/migrations"))
            cockpit = f"{url}/plugin/migrations/kafka-migrations/plans/demo/cutover"
            page.goto(cockpit, wait_until="networkidle")
            assert "/kafka-migrations/kafka-migrations/" not in page.url
            frame = page.frame_locator("iframe")
            main = frame.locator("main")
            main.get_by_text("Group billing: switched").wait_for()
            text = main.inner_text()
            for group in ("billing", "shipping"):
                assert f"Group {group}: switched" in text, text
            assert "NOT VERIFIED" not in text and re.search(r"Switch approved by admin", text), text
            assert text.count("verified") >= 2, text
            page.screenshot(path=str(REPORTS / "demo-ui-cutover.png"), full_page=True)

        demo = _of_the_demo(tmp_path, psutil.Process(process.pid))
        assert len(demo) > 3, "Airflow and the clusters should be running under the demo"
        process.send_signal(signal.SIGINT)  # what Ctrl-C sends
        rest, _ = process.communicate(timeout=240)
    finally:
        if process.poll() is None:  # a failure above: stopped as a person would, and killed only if that hangs
            process.send_signal(signal.SIGINT)
            try:
                process.wait(240)
            except subprocess.TimeoutExpired:
                for leftover in _of_the_demo(tmp_path, psutil.Process(process.pid)):
                    leftover.kill()
                process.wait(30)
    assert process.returncode == 0, "".join(shown) + rest
    assert rest.rstrip().endswith("stopped."), rest
    _gone, alive = psutil.wait_procs(demo, timeout=30)
    left = [p for p in _of_the_demo(tmp_path) if p.is_running()]
    assert not alive and not left, [p.cmdline() for p in alive + left]
