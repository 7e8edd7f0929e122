"""The real Airflow components for tests: api-server, scheduler, dag-processor and triggerer, LocalExecutor, SQLite.

Each runs as its own process on loopback with an Airflow home of its own, so the scheduler, the executor
slots, deferral to the triggerer, mapped-task arguments and Asset events are exercised as a user's
`airflow standalone` would (what `dag.test()` runs in one process, or leaves out).
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kafka_local.cluster import free_port

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
COMPONENTS = ("api-server", "scheduler", "dag-processor", "triggerer")
USER, PASSWORD = "admin", "admin-secret"
REPORTS = ROOT / "reports"  # screenshots for a person to look at (ignored by git)
CHROMIUM = "/usr/bin/chromium"  # Debian's package (scripts/ensure-system-deps.sh); playwright downloads none


class AirflowServices:
    """Starts the components with `environment` added to theirs; `api()` calls the REST API as `admin`."""

    def __init__(self, home: Path, dags_folder: Path, environment: dict[str, str]) -> None:
        self.home, self.port = home, free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        home.mkdir(parents=True, exist_ok=True)
        passwords = home / "passwords.json"
        passwords.write_text(json.dumps({USER: PASSWORD}))
        self.env = {
            **os.environ, **environment,
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(dags_folder),
            "AIRFLOW__CORE__PLUGINS_FOLDER": str(ROOT / "plugins"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": "4",
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{USER}:admin",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{self.url}/execution/",
            "AIRFLOW__API__BASE_URL": self.url,
            "AIRFLOW__API__PORT": str(self.port),
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(32),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
            "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "5",
            "AIRFLOW__SCHEDULER__TASK_QUEUED_TIMEOUT": "600",
            "AIRFLOW__TRIGGERER__JOB_HEARTBEAT_SEC": "2",
        }
        self.env.pop("AIRFLOW_CONFIG", None)
        self.processes: dict[str, subprocess.Popen] = {}
        self._token = ""

    # ------------------------------------------------------------------ processes
    def start(self, timeout_s: float = 180.0) -> None:
        migrate = subprocess.run([str(BIN / "airflow"), "db", "migrate"], env=self.env, capture_output=True,
                                 text=True, timeout=300)
        assert migrate.returncode == 0, migrate.stdout[-3000:] + migrate.stderr[-3000:]
        for component in COMPONENTS:
            self.start_component(component)
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/api/v2/monitor/health", timeout=5) as response:
                    health = json.loads(response.read())
                if all(health.get(part, {}).get("status") == "healthy"
                       for part in ("metadatabase", "scheduler", "triggerer", "dag_processor")):
                    return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            for name, process in self.processes.items():
                assert process.poll() is None, f"airflow {name} exited: {self.log_tail(name)}"
            assert time.monotonic() < deadline, f"Airflow did not become healthy: {self.log_tail('api-server')}"
            time.sleep(1)

    def start_component(self, component: str) -> None:
        log = (self.home / f"{component}.log").open("a")
        args = [str(BIN / "airflow"), component] + (["--port", str(self.port)] if component == "api-server" else [])
        self.processes[component] = subprocess.Popen(args, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                                     stdin=subprocess.DEVNULL, start_new_session=True)

    def stop_component(self, component: str, timeout_s: float = 60.0) -> None:
        process = self.processes.pop(component)
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(30)

    def stop(self) -> None:
        for component in list(self.processes):
            self.stop_component(component)

    def log_tail(self, component: str, chars: int = 4000) -> str:
        path = self.home / f"{component}.log"
        return path.read_text(errors="replace")[-chars:] if path.exists() else ""

    # ------------------------------------------------------------------ REST API
    def token(self) -> str:
        if not self._token:
            request = urllib.request.Request(f"{self.url}/auth/token", method="POST",
                                             data=json.dumps({"username": USER, "password": PASSWORD}).encode(),
                                             headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=30) as response:
                self._token = json.loads(response.read())["access_token"]
        return self._token

    def api(self, method: str, path: str, body: Any = None, token: str | None = None) -> tuple[int, Any]:
        """(status, JSON body) of a call to /api/v2; `token=""` sends none."""
        headers = {"Content-Type": "application/json"}
        token = self.token() if token is None else token
        if token:
            headers["Authorization"] = f"Bearer {token}"
        request = urllib.request.Request(f"{self.url}/api/v2{path}", method=method, headers=headers,
                                         data=None if body is None else json.dumps(body).encode())
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                text = response.read()
                return response.status, json.loads(text) if text else None
        except urllib.error.HTTPError as error:
            text = error.read()
            try:
                return error.code, json.loads(text)
            except ValueError:
                return error.code, text.decode(errors="replace")

    def wait_for_dag(self, dag_id: str, timeout_s: float = 180.0) -> None:
        deadline = time.monotonic() + timeout_s
        while self.api("GET", f"/dags/{dag_id}")[0] != 200:
            assert time.monotonic() < deadline, (f"DAG {dag_id} never appeared: "
                                                 f"{self.api('GET', '/importErrors')[1]}")
            time.sleep(2)

    def trigger(self, dag_id: str, conf: dict[str, Any]) -> str:
        status, body = self.api("POST", f"/dags/{dag_id}/dagRuns", {"logical_date": None, "conf": conf})
        assert status == 200, (status, body)
        return body["dag_run_id"]

    def task_instances(self, dag_id: str, run_id: str) -> list[dict[str, Any]]:
        status, body = self.api("GET", f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances?limit=200")
        assert status == 200, (status, body)
        return body["task_instances"]

    def run_state(self, dag_id: str, run_id: str) -> str:
        return self.api("GET", f"/dags/{dag_id}/dagRuns/{run_id}")[1]["state"]

    def wait_for_run(self, dag_id: str, run_id: str, timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        while (state := self.run_state(dag_id, run_id)) not in ("success", "failed"):
            assert time.monotonic() < deadline, f"run {run_id} still {state}: {self.task_instances(dag_id, run_id)}"
            time.sleep(2)
        return state

    def task_log(self, dag_id: str, run_id: str, task_id: str, map_index: int = -1, attempt: int = 1) -> str:
        status, body = self.api(
            "GET", f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/logs/{attempt}?map_index={map_index}")
        assert status == 200, (status, body)
        return json.dumps(body)


@contextmanager
def browser_page(services: AirflowServices) -> Iterator[Any]:
    """A page of Debian's chromium, driven by playwright, logged in to the Airflow UI as `admin`."""
    with logged_in_page(services.url, USER, PASSWORD) as page:
        yield page


@contextmanager
def logged_in_page(url: str, user: str, password: str) -> Iterator[Any]:
    """A page of Debian's chromium, driven by playwright, logged in to the Airflow UI at `url` as a person does."""
    from playwright.sync_api import sync_playwright

    REPORTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1400})
            page.set_default_timeout(30_000)
            page.goto(f"{url}/", wait_until="networkidle")
            page.fill("input[name=username]", user)
            page.fill("input[name=password]", password)
            page.locator("button[type=submit]").click()
            page.get_by_role("button", name="Browse").wait_for()
            yield page
        finally:
            browser.close()
