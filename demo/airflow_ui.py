"""`make demo-ui`: the demo's clusters and data, and Airflow with its UI and the cockpit, until Ctrl-C.

Starts a source and a target cluster on loopback, loads the demo's topics (as `make demo` does), then runs
`airflow standalone` (api-server, scheduler, dag-processor, triggerer) with the connections to both clusters and
a known login, and prints the URL, the login and where to look. Ctrl-C (or SIGTERM) stops Airflow, any engine a
run started, and both clusters. Airflow's own output goes to a log file, named on the terminal.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil
from run_demo import PLAN, ROOT, airflow_env, load_source

from kafka_local.cluster import free_port, start_pair

USER, PASSWORD = "admin", "demo-admin"


def wait_healthy(url: str, process: subprocess.Popen, log: Path, timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(f"{url}/api/v2/monitor/health", timeout=5) as response:
                health = json.loads(response.read())
            if all(health.get(part, {}).get("status") == "healthy"
                   for part in ("metadatabase", "scheduler", "triggerer", "dag_processor")):
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError):
            pass
        if process.poll() is not None:
            raise SystemExit(f"Airflow exited ({process.returncode}): see {log}")
        if time.monotonic() > deadline:
            raise SystemExit(f"Airflow did not answer within {timeout_s:.0f} s: see {log}")
        time.sleep(1)


def main() -> int:
    stop = {"asked": False}

    def ask_stop(_signum: int, _frame: object) -> None:
        stop["asked"] = True

    signal.signal(signal.SIGINT, ask_stop)
    signal.signal(signal.SIGTERM, ask_stop)
    home = Path(os.environ.get("AIRFLOW_HOME", ROOT / ".airflow")) / "demo-ui"
    home.mkdir(parents=True, exist_ok=True)
    log = home / "airflow.log"
    with tempfile.TemporaryDirectory(prefix="kafka-migration-demo-ui-") as workdir:
        print("starting local source and target clusters ...", flush=True)
        source, target = start_pair(Path(workdir))
        airflow: subprocess.Popen | None = None
        try:
            print(f"  source {source.bootstrap}, target {target.bootstrap}")
            print(f"loaded the source: {load_source(source)}", flush=True)
            port = free_port()
            url = f"http://127.0.0.1:{port}"
            passwords = home / "passwords.json"
            passwords.write_text(json.dumps({USER: PASSWORD}))
            env = {**airflow_env(source, target),
                   "AIRFLOW_HOME": str(home),
                   "MIRROR_SOURCE_BOOTSTRAP": source.bootstrap, "MIRROR_TARGET_BOOTSTRAP": target.bootstrap,
                   "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
                   "AIRFLOW__CORE__PLUGINS_FOLDER": str(ROOT / "plugins"),
                   "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
                   "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
                   "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{USER}:admin",
                   "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
                   "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{url}/execution/",
                   "AIRFLOW__API__BASE_URL": url, "AIRFLOW__API__PORT": str(port), "AIRFLOW__API__HOST": "127.0.0.1",
                   "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}"}
            print(f"starting Airflow (its output: {log}) ...", flush=True)
            with log.open("w") as out:
                airflow = subprocess.Popen([str(Path(sys.executable).parent / "airflow"), "standalone"], env=env,
                                           stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                           start_new_session=True)
            wait_healthy(url, airflow, log)
            print(f"\nAirflow UI: {url}   login: {USER} / {PASSWORD}\n"
                  f"  the migration: DAG kafka_migration__demo (plan {PLAN.relative_to(ROOT)}): Trigger, its form\n"
                  f"  a task's Switch report / Validation report links: the task's Details tab\n"
                  f"  the cockpit: {url}/plugin/kafka-migrations (Kafka migrations in the navigation)\n"
                  "Ctrl-C stops Airflow and the clusters.", flush=True)
            while not stop["asked"] and airflow.poll() is None:
                time.sleep(0.5)
            if airflow.poll() is not None:
                print(f"Airflow exited ({airflow.returncode}): see {log}")
                return 1
            return 0
        finally:
            print("stopping Airflow and the clusters ...", flush=True)
            if airflow is not None and airflow.poll() is None:
                os.killpg(airflow.pid, signal.SIGTERM)
                try:
                    airflow.wait(60)
                except subprocess.TimeoutExpired:
                    os.killpg(airflow.pid, signal.SIGKILL)
                    airflow.wait(30)
            stop_engine(home)
            source.stop()
            target.stop()
            print("stopped.", flush=True)


def stop_engine(home: Path) -> None:
    """An engine a run started and did not stop (detached, so not in Airflow's process group) is stopped too:
    the process of its pid file, if that process is a mirror-engine (a reused pid is left alone)."""
    pid_file = home / "mirror-engine" / "demo.pid"
    with contextlib.suppress(FileNotFoundError, ValueError, psutil.Error):
        process = psutil.Process(int(pid_file.read_text()))
        if any("mirror-engine" in part or "mirror_engine" in part for part in process.cmdline()):
            process.terminate()
            process.wait(60)


if __name__ == "__main__":
    sys.exit(main())
