"""The README's first step: `make demo` prints a short account that ends with its summary (everything else goes
to the log it names). `make demo-ui` is walked in a browser by `test_demo_ui_walk.py`."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

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
