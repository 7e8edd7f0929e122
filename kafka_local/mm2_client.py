"""MirrorMaker 2's client library (`connect-mirror-client`) run from the harness's jars, as applications call it.

`translate_offsets` runs `RemoteClusterUtils.translateOffsets` in a JVM (`Mm2TranslateOffsets.java`, compiled once
per source and jar set, cached beside the jars, against the jar set the brokers and `kafka_local.mm2` use): the
offsets a consumer group should use on a cluster, read from the checkpoints some replicator wrote there. Whether
MM2 or the engine wrote them, MM2's reader must understand them.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from kafka_local.maven import cache_dir, classpath, kafka_jar_set, resolve
from kafka_local.mm2 import render_properties

__all__ = ["translate_offsets"]

_SOURCE = Path(__file__).resolve().parent / "Mm2TranslateOffsets.java"
_MAIN_CLASS = "Mm2TranslateOffsets"
_QUIET_LOG4J2 = "status = error\nrootLogger.level = off\n"


def _compiled(lib: Path) -> Path:
    source = _SOURCE.read_bytes()
    folder = cache_dir() / "mm2-client" / hashlib.sha256(source + str(lib).encode()).hexdigest()[:16]
    if not (folder / f"{_MAIN_CLASS}.class").exists():
        if shutil.which("javac") is None:
            raise RuntimeError("javac is not on PATH: install a JDK (apt-get install openjdk-17-jdk-headless)")
        folder.mkdir(parents=True, exist_ok=True)
        result = subprocess.run(["javac", "-nowarn", "-cp", classpath(lib), "-d", str(folder), str(_SOURCE)],
                                capture_output=True, text=True, timeout=300)
        if result.returncode != 0:
            raise RuntimeError(f"javac failed on {_SOURCE.name}:\n{result.stdout[-3000:]}{result.stderr[-3000:]}")
    (folder / "log4j2.properties").write_text(_QUIET_LOG4J2)
    return folder


def translate_offsets(client_config: dict[str, str], remote_aliases: list[str], group: str,
                      timeout_s: float = 30.0) -> dict[str, dict[tuple[str, int], int]]:
    """Per remote alias, {(topic, partition): offset} as `RemoteClusterUtils.translateOffsets` gives it for
    `group`, from the checkpoints of the flow from that alias on the cluster `client_config` reaches (Java client
    settings; add `replication.policy.class` when the flow does not use MM2's default policy). One JVM for all."""
    lib = resolve(kafka_jar_set())
    classes = _compiled(lib)
    with tempfile.TemporaryDirectory(prefix="mm2-client-") as folder:
        properties = Path(folder) / "client.properties"
        properties.write_text(render_properties(client_config))
        properties.chmod(0o600)
        command = ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1",
                   f"-Dlog4j2.configurationFile={classes / 'log4j2.properties'}",
                   "-cp", f"{classes}{os.pathsep}{classpath(lib)}", _MAIN_CLASS,
                   str(properties), group, str(int(timeout_s * 1000)), *remote_aliases]
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s * len(remote_aliases) + 120)
    if result.returncode != 0:
        raise RuntimeError(f"RemoteClusterUtils.translateOffsets failed (exit {result.returncode}):\n"
                           f"{result.stdout[-2000:]}{result.stderr[-3000:]}")
    offsets: dict[str, dict[tuple[str, int], int]] = {alias: {} for alias in remote_aliases}
    for line in result.stdout.splitlines():
        fields = line.split("\t")
        if len(fields) == 5 and fields[0] == "OFFSET":
            offsets[fields[1]][(fields[2], int(fields[3]))] = int(fields[4])
    return offsets
