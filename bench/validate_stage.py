"""The DAG's validation stage for the demo plan: spark-submit (as it ran for every plan) against in-process.

Loads the demo's data (`demo/run_demo.py`'s 30,000 records over orders, payments and customers) into a
local source, copies it with the engine until caught up, then times the two ways the `validate.records`
task can validate it, alternated round by round:
- `spark-submit`: what the task ran before for every plan (`spark-submit --master local[2]` of
  `spark_jobs/validate.py`, with the Kafka connector's jars), start-up included;
- `in-process`: what it runs now for a copy below `validation.in_process_max_records`: counts the records
  to compare, then `validate.main(... --in-process)` in the task's own process.
Airflow's own part of the task (scheduling, the task process) is the same for both and not included.

    .venv/bin/python bench/validate_stage.py --rounds 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "demo")]  # demo/run_demo.py imports its neighbours by name

from demo.run_demo import load_source  # noqa: E402
from kafka_local.cluster import start_pair  # noqa: E402
from mirror_engine.plan import load_plan  # noqa: E402
from mirror_engine.replication import Replicator  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from spark_jobs import validate
    from spark_jobs.packages import job_packages

    times: dict[str, list[float]] = {"spark-submit": [], "in-process": []}
    with tempfile.TemporaryDirectory(prefix="bench-") as workdir:
        source, target = start_pair(Path(workdir))
        try:
            counts = load_source(source)
            os.environ["MIRROR_SOURCE_BOOTSTRAP"], os.environ["MIRROR_TARGET_BOOTSTRAP"] = \
                source.bootstrap, target.bootstrap
            plan_file = str(ROOT / "migrations" / "demo.yaml")
            plan = load_plan(plan_file)
            assert Replicator(plan, source.client_config(), target.client_config()).run(
                max_seconds=120, until_caught_up=True).ok
            reports = str(Path(workdir) / "reports")
            submit = [str(Path(sys.executable).parent / "spark-submit"), "--master", "local[2]",
                      "--conf", "spark.driver.host=127.0.0.1", *job_packages().submit_args(),
                      str(ROOT / "spark_jobs" / "validate.py"), "--plan", plan_file, "--report-dir", reports]
            env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": str(ROOT)}
            for _ in range(args.rounds):
                started = time.perf_counter()
                done = subprocess.run(submit, env=env, capture_output=True, text=True, timeout=900)
                assert done.returncode == 0, done.stderr[-3000:]
                times["spark-submit"].append(time.perf_counter() - started)
                started = time.perf_counter()
                assert validate.copied_record_count(plan) <= plan.validation.in_process_max_records
                assert validate.main(["--plan", plan_file, "--report-dir", reports, "--in-process"]) == 0
                times["in-process"].append(time.perf_counter() - started)
        finally:
            source.stop()
            target.stop()
    print(f"\nvalidation of the demo plan's copy ({sum(counts.values()):,} records, 3 topics), "
          f"{args.rounds} rounds alternated")
    print(f"{'way':<14} {'median s':>9} {'min s':>7} {'max s':>7}")
    for way, seconds in times.items():
        print(f"{way:<14} {statistics.median(seconds):9.1f} {min(seconds):7.1f} {max(seconds):7.1f}")


if __name__ == "__main__":
    main()
