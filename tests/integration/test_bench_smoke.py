"""The benchmark scripts keep working (run at a tiny size; no timing is asserted)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def test_engine_benchmark_runs_at_a_tiny_size():
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "engine_vs_raw.py"), "--scale", "0.002"],
                            capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [line for line in result.stdout.splitlines() if "engine copy" in line or "raw produce" in line]
    assert len(rows) == 4
    workers = [line for line in result.stdout.splitlines() if line.startswith(("1 worker", "2 workers"))]
    assert len(workers) == 4, result.stdout


def test_switch_benchmark_runs_at_a_tiny_size():
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "switch.py"), "--groups", "1", "--records", "800",
                             "--rate", "200"], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [line.split() for line in result.stdout.splitlines() if line.startswith(("on-demand", "checkpoints"))]
    assert len(rows) == 2
    assert all(row[-2:] == ["0", "0"] for row in rows), f"records re-read or skipped after a switch: {rows}"


def test_failback_benchmark_runs_at_a_tiny_size():
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "failback.py"), "--topics", "1", "--partitions", "2",
                             "--records", "400", "--back", "400", "--groups", "1"],
                            capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    figures = lines[lines.index(next(line for line in lines if line.startswith("prepare s"))) + 1].split()
    assert len(figures) == 8 and all(re.fullmatch(r"[\d,.]+", figure) for figure in figures), result.stdout


def test_schemas_benchmark_runs_at_a_tiny_size():
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "schemas.py"), "--records", "2000", "--rounds", "1",
                             "--subjects", "5"], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    median = next(line for line in result.stdout.splitlines() if line.startswith("median")).split()
    assert len(median) == 4 and re.fullmatch(r"\d+\.\d\d", median[-1]), result.stdout
    assert re.search(r"^first \(registered\) +[\d.]+ +[\d,]+$", result.stdout, re.MULTILINE), result.stdout


def test_soak_memory_benchmark_runs_at_a_tiny_size():
    # The engine as it is, and once through engine_with_settings.py (client settings, mallopt, trim, heap report).
    tried = ("tried,consumer.queued.min.messages=1000,producer.queue.buffering.max.messages=1000,"
             "mallopt.mmap_threshold=262144,trim=1,heap=0.2")
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "soak_memory.py"), "--case", "4000x100", "--case",
                             "800x1024", "--idle", "2", "--engine", "plain", "--engine", tried],
                            capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    lines = result.stdout.splitlines()
    rows = [line.split() for line in lines
            if line.startswith(("4,000 x 100 B", "800 x 1024 B")) and "loaded" not in line]
    assert [row[4] for row in rows] == ["plain", "tried", "plain", "tried"], result.stdout
    assert all(int(row[-3].replace(",", "")) > 0 for row in rows), result.stdout  # a peak RSS for every run
    assert any(line.startswith("  heap (glibc mallinfo2") for line in lines), result.stdout  # the heap report


def test_startup_and_switch_benchmark_runs_at_a_tiny_size():
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "startup_and_switch.py"), "--runs", "1",
                             "--traced-runs", "1", "--partitions", "2", "--backlog", "200", "--rate", "100"],
                            capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    lines = result.stdout.splitlines()
    startup = [line.split() for line in lines if line.startswith("this checkout") and " bytecode" not in line
               and ("restart" in line or "new plan" in line)]
    assert len(startup) == 4, result.stdout
    switch = [line.split() for line in lines if line.startswith("this checkout") and (" CLI " in line
                                                                                       or " in-process " in line)]
    assert len(switch) == 3, result.stdout
    assert any(line.startswith("first record seen on the target") for line in lines), result.stdout
    assert sum(line.startswith("every partition proven") for line in lines) == 2, result.stdout


@pytest.mark.spark
def test_backfill_and_validation_benchmark_runs_at_a_tiny_size():
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "backfill_validation.py"), "--records", "4000"],
                            capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    jobs = [" ".join(line.split()[0:2]) for line in result.stdout.splitlines()
            if line.startswith(("engine copy (", "backfill local", "validation local", "validation in-process"))]
    assert jobs == ["engine copy", "backfill local[1]", "validation local[1]", "engine copy", "backfill local[2]",
                    "validation local[2]", "validation in-process"], result.stdout


def test_mirror_maker_comparison_runs_at_a_tiny_size():
    # Both translators every 2 s, so the 8 s watch sees their final offsets.
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "vs_mm2.py"), "--scale", "0.002", "--groups", "2",
                             "--rate", "200", "--mm2-interval", "2", "--engine-interval", "2", "--window", "8"],
                            capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    lines = result.stdout.splitlines()
    copy = [line.split()[0] for line in lines if line.startswith(("raw produce", "MirrorMaker 2 (1 task)", "engine  "))]
    assert copy == ["raw", "MirrorMaker", "engine"], result.stdout
    switch = {line.split()[0]: line.split() for line in lines
              if line.startswith(("MirrorMaker 2 (checkpoints", "engine checkpoints"))}
    assert set(switch) == {"MirrorMaker", "engine"}, result.stdout
    # The engine's translation is exact: every group translated, nothing read twice, nothing skipped.
    assert switch["engine"][5:9] == ["2/2", "0", "0", "0"], result.stdout
    fidelity = [line for line in lines if line.startswith(("orders: partitions", "ACL DENY User:bob READ"))]
    assert len(fidelity) == 2, result.stdout


def test_scale_benchmark_runs_at_a_tiny_size():
    # Two rounds: the engine measured twice, its first run's topics deleted from the target before the second; each
    # `run` launched once the machine settled after `prepare`.
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "scale.py"), "--shape", "6x2x3", "--records", "20",
                             "--steady", "3", "--no-mm2", "--rounds", "2", "--settle", "5", "--quiet-launch"],
                            capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    rows = {line[:40].strip(): line[40:].split() for line in result.stdout.splitlines()[2:] if line[:40].strip()}
    # Every figure was measured in both runs: no step failed at this size.
    for figure in ("plan", "prepare", "run: first record", "run: backlog copied", "switch-group (one group)",
                   "DAG parse", "largest status record, KiB", "engine log lines per minute",
                   "engine CPU to the backlog copied, s", "load average at launch (--quiet-launch)"):
        assert len(rows[figure]) >= 2 and "-" not in rows[figure][:2], result.stdout + result.stderr[-3000:]
    # Each run's 6 copies and its flow's internal topics were deleted after it.
    deleted = [int(n) for n in re.findall(r"deleted (\d+) topics from the target", result.stderr)]
    assert len(deleted) == 2 and all(n > 6 for n in deleted), result.stderr[-3000:]
    # The machine settled before each launch and between the runs.
    assert len(re.findall(r"load average \d", result.stderr)) == 3, result.stderr[-3000:]


def test_fresh_client_offsets_benchmark_runs_at_a_tiny_size(kafka_pair):
    source, _ = kafka_pair
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "fresh_client_offsets.py"), "--bootstrap",
                             source.bootstrap, "--tries", "2", "--partitions", "4"],
                            capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [line for line in result.stdout.splitlines() if line.startswith(("at once", "connected first"))]
    assert len(rows) == 2 and all(" of 2 " in row for row in rows), result.stdout
