"""Real MirrorMaker 2 as the referee of a properties file: does MM2 4.3.1 accept it?

`check_mm2_files` compiles `Mm2ConfigCheck.java` (once per source, cached beside the jars) against the jar
set the local brokers and `kafka_local.mm2` use, and runs it in one JVM over many files. The Java side does
with Kafka's own classes what `connect-mirror-maker.sh` does before it reaches a broker (MirrorMakerConfig,
the flows, each herder's worker config, each connector's config as Connect's herder validates it, the
enabled connectors' own and client configs, JAAS entries, key stores present here); its comment lists what
it leaves out. No cluster is needed: starting MM2 against real clusters would also judge connections,
logins and certificates, which a file written for another machine cannot pass here.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from kafka_local.maven import cache_dir, classpath, kafka_jar_set, resolve

__all__ = ["Mm2Verdict", "check_mm2_files"]

_SOURCE = Path(__file__).resolve().parent / "Mm2ConfigCheck.java"
_MAIN_CLASS = "org.apache.kafka.connect.mirror.Mm2ConfigCheck"
_QUIET_LOG4J2 = "status = error\nrootLogger.level = off\n"


@dataclass(frozen=True)
class Mm2Verdict:
    """MM2's answer for one file: accepted or not, its enabled flows ("a->b"), and why it refused."""

    file: str
    accepted: bool
    flows: tuple[str, ...]
    reason: str


def _compiled(lib: Path) -> Path:
    source = _SOURCE.read_bytes()
    folder = cache_dir() / "mm2-config-check" / hashlib.sha256(source + str(lib).encode()).hexdigest()[:16]
    if not (folder / "org" / "apache" / "kafka" / "connect" / "mirror" / "Mm2ConfigCheck.class").exists():
        if shutil.which("javac") is None:
            raise RuntimeError("javac is not on PATH: install a JDK (apt-get install openjdk-17-jdk-headless)")
        folder.mkdir(parents=True, exist_ok=True)
        result = subprocess.run(["javac", "-nowarn", "-cp", classpath(lib), "-d", str(folder), str(_SOURCE)],
                                capture_output=True, text=True, timeout=300)
        if result.returncode != 0:
            raise RuntimeError(f"javac failed on {_SOURCE.name}:\n{result.stdout[-3000:]}{result.stderr[-3000:]}")
    (folder / "log4j2.properties").write_text(_QUIET_LOG4J2)
    return folder


def check_mm2_files(files: Iterable[str | Path], cwd: Path, environ: Mapping[str, str] | None = None,
                    timeout_s: float = 600.0) -> dict[str, Mm2Verdict]:
    """MM2's verdict on each file, by its name as given; relative paths in the files resolve against `cwd`.

    `environ` is the JVM's environment (what MM2's EnvVarConfigProvider reads), the current one by default.
    """
    lib = resolve(kafka_jar_set())
    classes = _compiled(lib)
    names = [str(name) for name in files]
    command = ["java", "-Xmx512m", f"-Dlog4j2.configurationFile={classes / 'log4j2.properties'}",
               "-cp", f"{classes}{os.pathsep}{classpath(lib)}", _MAIN_CLASS, *names]
    result = subprocess.run(command, cwd=cwd, env=dict(os.environ if environ is None else environ),
                            capture_output=True, text=True, timeout=timeout_s)
    verdicts: dict[str, Mm2Verdict] = {}
    for line in result.stdout.splitlines():
        fields = line.split("\t")
        if len(fields) == 5 and fields[0] == "RESULT":
            _, name, verdict, flows, reason = fields
            verdicts[name] = Mm2Verdict(name, verdict == "ACCEPT", tuple(f for f in flows.split(",") if f), reason)
    missing = [name for name in names if name not in verdicts]
    if result.returncode != 0 or missing:
        raise RuntimeError(f"the MM2 config check gave no verdict for {missing or 'some files'} "
                           f"(exit {result.returncode}):\n{result.stderr[-3000:]}")
    return verdicts
