"""The README's first steps: `make demo` prints a short account that ends with its summary (everything else goes
to the log it names), and `make demo-ui` starts Airflow on the demo's clusters, prints a URL and a login that
work, and stops everything on Ctrl-C."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest

from tests.integration.airflow_services import ROOT

pytestmark = [pytest.mark.integration, pytest.mark.airflow, pytest.mark.spark]

MAX_LINES = 60  # the whole account of a demo run (it printed 15,030 lines before)


def test_make_demo_prints_a_short_account_ending_with_its_summary():
    result = subprocess.run([sys.executable, str(ROOT / "demo" / "run_demo.py")], capture_output=True, text=True,
                            timeout=1500, env={**os.environ, "PYTHONPATH": str(ROOT)})
    lines = result.stdout.splitlines()
    print(f"\nmake demo: {len(lines)} lines on stdout, {len(result.stderr.splitlines())} on stderr")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert result.stderr == "", result.stderr[-3000:]
    assert len(lines) <= MAX_LINES, result.stdout
    for shown in ("catch_up.wait_for_lag", "switch_groups.switch[billing]", "== validation: clean", "billing: {",
                  "== partition check"):
        assert shown in result.stdout, shown
    assert lines[-1].startswith("demo finished: every record copied in order"), lines[-3:]
    log = re.search(r"the full log \(.*\): (\S+)", result.stdout)
    # What the terminal no longer shows is in the log: every task's own log lines (the validation of the demo's
    # small copy runs in its task, without Spark).
    assert log and "[DAG TEST] running task" in Path(log.group(1)).read_text(errors="replace")


def test_make_demo_ui_prints_a_working_login_and_stops_on_ctrl_c(tmp_path):
    env = {**os.environ, "AIRFLOW_HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, str(ROOT / "demo" / "airflow_ui.py")], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True)
    shown: list[str] = []
    try:
        assert process.stdout is not None
        for line in process.stdout:
            shown.append(line)
            if "login:" in line or "exited" in line:
                break
        match = re.search(r"Airflow UI: (\S+)\s+login: (\S+) / (\S+)", "".join(shown))
        assert match, "".join(shown)
        url, user, password = match.groups()
        request = urllib.request.Request(f"{url}/auth/token", method="POST",
                                         headers={"Content-Type": "application/json"},
                                         data=json.dumps({"username": user, "password": password}).encode())
        with urllib.request.urlopen(request, timeout=30) as response:
            token = json.loads(response.read())["access_token"]
        deadline = time.monotonic() + 180
        while True:  # the dag-processor parses the plans' DAGs
            request = urllib.request.Request(f"{url}/api/v2/dags/kafka_migration__demo",
                                             headers={"Authorization": f"Bearer {token}"})
            try:
                with urllib.request.urlopen(request, timeout=30) as response:
                    assert response.status == 200
                    break
            except urllib.error.HTTPError as error:
                assert error.code == 404 and time.monotonic() < deadline, error
                time.sleep(2)
        children = psutil.Process(process.pid).children(recursive=True)
        assert children, "no Airflow or Kafka processes under the demo"
        process.send_signal(signal.SIGINT)  # what Ctrl-C sends
        rest, _ = process.communicate(timeout=180)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(30)
    assert process.returncode == 0, "".join(shown) + rest
    assert rest.rstrip().endswith("stopped."), rest
    _gone, alive = psutil.wait_procs(children, timeout=30)
    assert not alive, [p.cmdline() for p in alive]
