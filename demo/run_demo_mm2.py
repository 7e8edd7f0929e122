"""The demo migration from a MirrorMaker 2 properties file (`make demo MM2=1`), as an MM2 user runs it.

The same clusters, data and live traffic as `run_demo.py`, but the migration is driven by `demo/mm2.properties`
through the command line, where MirrorMaker 2 would run `connect-mirror-maker.sh demo/mm2.properties`:
`mirror-engine plan` and `prepare --dry-run` show what the target needs, one `mirror-engine run --mm2-config`
copies the topics and, in the same process, writes heartbeats, checkpoints and the groups' translated offsets on
the target (as the file's sync.group.offsets.enabled asks); once the lag is 0 and both groups are current on the
target, `switch-group` moves billing and shipping with a proof and `switch-producers` switches the topics' writes.
Then it checks partition by partition that the target holds exactly the source's records. (The Spark
validation of `run_demo.py` runs from the Airflow DAG, which reads YAML plans.)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka.admin import AdminClient
from quiet import Quiet
from run_demo import compare, live_traffic, load_source, run_step

from kafka_local.cluster import start_pair
from mirror_engine.cutover import CheckpointsCurrent, LagAtMost, ReadinessCheck
from mirror_engine.kafka import GroupError, committed_offsets
from mirror_engine.mm2 import read_mm2_config
from mirror_engine.observe import last_heartbeat

ROOT = Path(__file__).resolve().parent.parent
MM2_FILE = ROOT / "demo" / "mm2.properties"
GROUPS = ("billing", "shipping")


def wait_until(check: ReadinessCheck, timeout_s: float, say=print) -> None:
    """Poll a readiness check (what the DAG's sensors ask) until it is done, printing its progress."""
    deadline, shown = time.monotonic() + timeout_s, ""
    try:
        while True:
            readiness = check.check()
            if readiness.progress != shown:
                say(f"   {readiness.progress}")
                shown = readiness.progress
            if readiness.done:
                return
            if readiness.failed or time.monotonic() > deadline:
                raise SystemExit(f"gave up waiting: {readiness.failed or readiness.progress}")
            time.sleep(2)
    finally:
        check.close()


def main() -> int:
    log_path = ROOT / "reports" / "demo-mm2.log"
    quiet = Quiet(log_path)
    try:
        outcome = run(quiet.say)
    finally:
        quiet.close()
    quiet.say(f"\nthe full log (engine, client lines): {log_path}")
    quiet.say("demo finished from the MM2 file: every record copied in order, both groups current on the target "
              "and switched exactly, producers switched." if outcome == 0 else
              "demo FAILED: see the lines above and the full log.")
    return outcome


def run(say) -> int:
    bin_dir = Path(sys.executable).parent
    cli = [str(bin_dir / "mirror-engine")]
    with tempfile.TemporaryDirectory(prefix="kafka-migration-demo-mm2-") as workdir:
        say("starting local source and target clusters ...")
        source, target = start_pair(Path(workdir))
        engine: subprocess.Popen[str] | None = None
        try:
            os.environ.update(DEMO_SOURCE_BOOTSTRAP=source.bootstrap, DEMO_TARGET_BOOTSTRAP=target.bootstrap)
            env = os.environ.copy()
            say(f"  source {source.bootstrap}, target {target.bootstrap}")
            say(f"loaded the source: {load_source(source)}")
            mm2 = ["--mm2-config", str(MM2_FILE)]
            run_step("what the target needs for this MM2 file", [*cli, "plan", *mm2], env, say)
            run_step("the target validates it (nothing applied)", [*cli, "prepare", *mm2, "--dry-run"], env, say)

            traffic = live_traffic(source, seconds=40)
            admin = AdminClient(source.client_config())
            deadline = time.monotonic() + 60
            while not all(_has_offsets(admin, group) for group in GROUPS):  # MM2 lists the groups as it starts
                if time.monotonic() > deadline:
                    raise SystemExit("the demo's consumer groups committed nothing on the source")
                time.sleep(0.5)

            say(f"\n== one process does what MirrorMaker 2 would: copy, heartbeats, checkpoints, group offsets\n"
                  f"$ mirror-engine run --mm2-config {MM2_FILE.relative_to(ROOT)}")
            engine_log = Path(workdir) / "engine.log"
            with engine_log.open("w") as log:
                engine = subprocess.Popen([*cli, "run", *mm2], stdout=subprocess.PIPE, stderr=log, text=True, env=env)
            for thread in traffic:
                thread.join()
            plan = read_mm2_config(MM2_FILE).plan
            source_config, target_config = plan.client_configs()
            say("\n== waiting for the copy to catch up (producers and consumers on the source have stopped)")
            wait_until(LagAtMost(plan, source_config, target_config, max_lag=0), 300, say)
            say("== waiting for both groups to be current on the target (written by the run's checkpoint loop)")
            wait_until(CheckpointsCurrent(plan, source_config, target_config), 120, say)
            beat = last_heartbeat(target_config, plan)
            say(f"   last heartbeat of the flow: {time.time() - beat.timestamp_ms / 1000:.1f} s ago" if beat
                  else "   no heartbeat of the flow on the target")
            run_step("the flow's workers and lag", [*cli, "status", *mm2], env, say, show=8)

            for group in GROUPS:
                run_step(f"switch {group}", [*cli, "switch-group", *mm2, "--group", group], env, say, head=1)
            for topic in ("orders", "payments"):
                run_step(f"switch the producers of {topic}",
                         [*cli, "switch-producers", *mm2, "--topic", topic, "--idle-seconds", "3"], env, say)

            engine.send_signal(signal.SIGTERM)
            summary, _ = engine.communicate(timeout=120)
            say(f"\n== the engine stopped (exit {engine.returncode}): {summary.strip()}")
            lines = [line for line in engine_log.read_text().splitlines()
                     if "checkpoint lease" in line or "beside the copy" in line]
            say("\n".join(f"   {line}" for line in lines))
            target_admin = AdminClient(target.client_config())
            for group in GROUPS:
                say(f"== {group} on the target: {dict(sorted(committed_offsets(target_admin, group).items()))}")
            if engine.returncode != 0 or not compare(source, target, say):
                say("the target differs from the source, or the engine failed")
                return 1
            return 0
        finally:
            if engine is not None and engine.poll() is None:
                engine.kill()
                engine.wait()
            source.stop()
            target.stop()


def _has_offsets(admin: AdminClient, group: str) -> bool:
    try:
        return bool(committed_offsets(admin, group))
    except GroupError:
        return False


if __name__ == "__main__":
    sys.exit(main())
