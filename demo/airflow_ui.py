"""`make demo-ui`: the demo's migration driven by a person, in Airflow's UI and the cockpit, until Ctrl-C.

Starts a source and a target cluster on loopback, loads the demo's topics (as `make demo` does) and runs the shop's
applications on the source: a producer writing orders and payments, and the groups billing and shipping consuming
them (`live_traffic`). Then runs `airflow standalone` (api-server, scheduler, dag-processor, triggerer) with the
connections to both clusters and a known login, and prints the URL, the login and where to look.

The applications act as a team's would at its cutover, following the newest run of the migration DAG: the
consumers stop when the run reaches its switch of the groups (after the approval, when one is asked), the producer
when it reaches the switch of the producers. Only the DAGs without a schedule are unpaused: an example plan with
a schedule of its own (and clusters that are not here) stays paused.

Ctrl-C (or SIGTERM) stops Airflow, the engine a run started (through the same supervision the DAG uses), the
applications and both clusters. Airflow's own output goes to a log file, named on the terminal.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from live_traffic import GROUPS, PRODUCED_TOPICS, LiveTraffic  # demo/live_traffic.py, beside this script
from run_demo import PLAN, ROOT, airflow_env, load_source

from kafka_local.cluster import free_port, start_pair
from mirror_engine.replication import DetachedWorker, SupervisionError

USER, PASSWORD = "admin", "demo-admin"
DAG_ID = "kafka_migration__demo"
ACTIVE = ("queued", "scheduled", "running", "deferred", "up_for_retry", "up_for_reschedule", "success", "failed",
          "awaiting_input")


class AirflowApi:
    """The REST API of the demo's Airflow, as its admin."""

    def __init__(self, url: str) -> None:
        self.url, self._token = url, ""

    def call(self, method: str, path: str, body: Any = None) -> Any:
        if not self._token:
            self._token = self._request("POST", "/auth/token", {"username": USER, "password": PASSWORD}, auth=False
                                        )["access_token"]
        return self._request(method, f"/api/v2{path}", body)

    def _request(self, method: str, path: str, body: Any, auth: bool = True) -> Any:
        headers = {"Content-Type": "application/json"}
        if auth:
            headers["Authorization"] = f"Bearer {self._token}"
        request = urllib.request.Request(f"{self.url}{path}", method=method, headers=headers,
                                         data=None if body is None else json.dumps(body).encode())
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read() or b"null")


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


def unpause_unscheduled(api: AirflowApi, timeout_s: float = 180) -> list[str]:
    """Once the demo's DAG is parsed: unpause every DAG without a schedule (the demo's migration, its backfill,
    validation and flow-control DAGs); those with a schedule stay paused. Returns the ones left paused."""
    deadline = time.monotonic() + timeout_s
    while True:
        dags = api.call("GET", "/dags?limit=200")["dags"]
        if any(dag["dag_id"] == DAG_ID for dag in dags):
            break
        if time.monotonic() > deadline:
            raise SystemExit(f"the DAG {DAG_ID} did not appear within {timeout_s:.0f} s: see the dag-processor's log")
        time.sleep(2)
    paused = []
    for dag in dags:
        if dag.get("timetable_summary") in (None, "None"):
            api.call("PATCH", f"/dags/{dag['dag_id']}", {"is_paused": False})
        else:
            paused.append(dag["dag_id"])
    return paused


class Cutover(threading.Thread):
    """Follows the newest run of the demo's DAG and stops the applications as a team would at its cutover."""

    def __init__(self, api: AirflowApi, traffic: LiveTraffic) -> None:
        super().__init__(name="demo-cutover", daemon=True)
        self.api, self.traffic, self.halt = api, traffic, threading.Event()
        self.said: set[tuple[str, str]] = set()

    def run(self) -> None:
        while not self.halt.wait(2):
            try:
                self.look()
            except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError, KeyError):
                continue  # Airflow busy or restarting: look again

    def look(self) -> None:
        runs = self.api.call("GET", f"/dags/{DAG_ID}/dagRuns?order_by=-run_after&limit=1")["dag_runs"]
        if not runs:
            return
        run = runs[0]
        instances = self.api.call("GET", f"/dags/{DAG_ID}/dagRuns/{run['dag_run_id']}/taskInstances?limit=200"
                                  )["task_instances"]
        reached = {ti["task_id"].split(".")[0] for ti in instances if ti["state"] in ACTIVE}
        if "switch_groups" in reached and self.traffic.consuming:
            self.traffic.stop_consumers()
            print(f"  the run reached the switch of the groups: the shop's consumers ({', '.join(GROUPS)}) stopped "
                  "on the source, as a team stops them at its cutover", flush=True)
        if "switch_producers" in reached and self.traffic.producing:
            self.traffic.stop_producer()
            print(f"  the run reached the switch of the producers: the shop's producer ({', '.join(PRODUCED_TOPICS)}) "
                  "stopped on the source", flush=True)
        if run["state"] in ("success", "failed") and (run["dag_run_id"], run["state"]) not in self.said:
            self.said.add((run["dag_run_id"], run["state"]))
            print(f"  run {run['dag_run_id']} ended: {run['state']}", flush=True)

    def stop(self) -> None:
        self.halt.set()
        self.join(10)


def main() -> int:
    stop = {"asked": False, "serving": False}

    def ask_stop(_signum: int, _frame: object) -> None:
        stop["asked"] = True
        if not stop["serving"]:  # still starting: stop whatever it waits for, and clean up (the `finally` below)
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, ask_stop)
    signal.signal(signal.SIGTERM, ask_stop)
    home = Path(os.environ.get("AIRFLOW_HOME", ROOT / ".airflow")) / "demo-ui"
    home.mkdir(parents=True, exist_ok=True)
    log = home / "airflow.log"
    with tempfile.TemporaryDirectory(prefix="kafka-migration-demo-ui-") as workdir:
        print("starting local source and target clusters ...", flush=True)
        source, target = start_pair(Path(workdir))
        airflow: subprocess.Popen | None = None
        traffic: LiveTraffic | None = None
        cutover: Cutover | None = None
        try:
            print(f"  source {source.bootstrap}, target {target.bootstrap}")
            print(f"loaded the source: {load_source(source)}", flush=True)
            traffic = LiveTraffic(source).start()
            print(f"the shop's applications run on the source: a producer writing {' and '.join(PRODUCED_TOPICS)}, "
                  f"the groups {' and '.join(GROUPS)} consuming", flush=True)
            port = free_port()
            url = f"http://127.0.0.1:{port}"
            passwords = home / "passwords.json"
            passwords.write_text(json.dumps({USER: PASSWORD}))
            bin_dir = str(Path(sys.executable).parent)  # `airflow standalone` starts its components by name
            env = {**airflow_env(source, target),
                   "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
                   "AIRFLOW_HOME": str(home),
                   "MIRROR_SOURCE_BOOTSTRAP": source.bootstrap, "MIRROR_TARGET_BOOTSTRAP": target.bootstrap,
                   "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
                   "AIRFLOW__CORE__PLUGINS_FOLDER": str(ROOT / "plugins"),
                   "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
                   "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",
                   "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{USER}:admin",
                   "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
                   "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{url}/execution/",
                   "AIRFLOW__API__BASE_URL": url, "AIRFLOW__API__PORT": str(port), "AIRFLOW__API__HOST": "127.0.0.1",
                   "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(32),
                   "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}"}
            print(f"starting Airflow (its output: {log}) ...", flush=True)
            with log.open("w") as out:
                airflow = subprocess.Popen([str(Path(sys.executable).parent / "airflow"), "standalone"], env=env,
                                           stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                           start_new_session=True)
            wait_healthy(url, airflow, log)
            api = AirflowApi(url)
            paused = unpause_unscheduled(api)
            cutover = Cutover(api, traffic)
            cutover.start()
            print(f"\nAirflow UI: {url}   login: {USER} / {PASSWORD}\n"
                  f"  the migration: DAG {DAG_ID} (plan {PLAN.relative_to(ROOT)}): Trigger, its form\n"
                  "  an approval asked for (the form's \"Approve before the switch\"): Browse > Required Actions\n"
                  f"  the cockpit: {url}/plugin/migrations (Migrations in the navigation)\n"
                  + (f"  left paused, as they run on a schedule: {', '.join(paused)}\n" if paused else "")
                  + "Ctrl-C stops Airflow, the engine, the applications and the clusters.", flush=True)
            stop["serving"] = True
            while not stop["asked"] and airflow.poll() is None:
                time.sleep(0.5)
            if airflow.poll() is not None:
                print(f"Airflow exited ({airflow.returncode}): see {log}")
                return 1
            return 0
        except KeyboardInterrupt:  # interrupted while starting
            return 0
        finally:
            print("stopping Airflow, the engine, the applications and the clusters ...", flush=True)
            if cutover is not None:
                cutover.stop()
            if airflow is not None and airflow.poll() is None:
                os.killpg(airflow.pid, signal.SIGTERM)
                try:
                    airflow.wait(60)
                except subprocess.TimeoutExpired:
                    os.killpg(airflow.pid, signal.SIGKILL)
                    airflow.wait(30)
            stop_engine(home)  # while the clusters still answer: it stores its progress as it stops
            if traffic is not None:
                traffic.stop()
            source.stop()
            target.stop()
            print("stopped.", flush=True)


def stop_engine(home: Path) -> None:
    """The engine a run started and did not stop (detached, so not in Airflow's process group), stopped as the
    DAG's finish stage stops it: by its recorded identity (a reused pid is left alone), SIGTERM, then SIGKILL."""
    worker = DetachedWorker(PLAN.stem, home)
    if not worker.started_here():
        return
    try:
        engine, killed = worker.stop(timeout_s=30)
    except SupervisionError as error:  # it had exited already: nothing to stop
        print(f"  {error}", flush=True)
        return
    print(f"  engine {'killed' if killed else 'stopped'} ({engine.describe()})", flush=True)


if __name__ == "__main__":
    sys.exit(main())
