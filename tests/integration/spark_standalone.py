"""A Spark standalone cluster on loopback for tests: one master and one worker, started with pyspark's own
`spark-class` (pip's pyspark has no `sbin/` scripts). Executors run as the worker's children, each in its own
directory of the worker's `work` folder, where Spark puts the files a job ships with `--files`."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from kafka_local.cluster import free_port


@dataclass
class SparkStandalone:
    home: Path
    port: int
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def master(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    @property
    def work_dir(self) -> Path:
        return self.home / "work"

    def executor_logs(self) -> list[Path]:
        """The `stderr` of every executor the worker started (its first lines are the executor's command)."""
        return sorted(self.work_dir.glob("app-*/*/stderr"))

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in reversed(self.processes):
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def _wait_for(log: Path, text: str, process: subprocess.Popen[bytes], timeout_s: float = 90.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if log.exists() and text in log.read_text(errors="replace"):
            return
        if process.poll() is not None:
            break
        time.sleep(0.3)
    tail = log.read_text(errors="replace")[-3000:] if log.exists() else "(no log)"
    raise RuntimeError(f"Spark standalone: '{text}' not seen in {log}:\n{tail}")


def start_standalone(home: Path) -> SparkStandalone:
    """A master and a worker (2 cores, 2.5 GB: room for an executor of the jobs' default 2g heap) on 127.0.0.1, web
    UIs on free loopback ports."""
    home.mkdir(parents=True, exist_ok=True)
    spark_home = _spark_home()
    env = {**os.environ, "SPARK_HOME": str(spark_home), "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_LOG_DIR": str(home), "SPARK_NO_DAEMONIZE": "1"}
    cluster = SparkStandalone(home, free_port())
    spark_class = str(spark_home / "bin" / "spark-class")
    commands = [
        ("master", [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                    "--port", str(cluster.port), "--webui-port", str(free_port())], "I have been elected leader"),
        ("worker", [spark_class, "org.apache.spark.deploy.worker.Worker", cluster.master, "--host", "127.0.0.1",
                    "--cores", "2", "--memory", "2560m", "--webui-port", str(free_port()),
                    "--work-dir", str(cluster.work_dir)], "Successfully registered with master"),
    ]
    try:
        for name, command, ready in commands:
            log = home / f"{name}.log"
            with log.open("wb") as out:
                process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=home)
            cluster.processes.append(process)
            _wait_for(log, ready, process)
    except BaseException:
        cluster.stop()
        raise
    return cluster
