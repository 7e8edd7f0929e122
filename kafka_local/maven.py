"""Resolve jar sets from Maven Central with Maven, cached in the project's git-ignored `.cache/`.

Each jar set is described by a tiny generated pom; `mvn dependency:copy-dependencies` copies the
runtime closure into a folder. A marker file records the pom it was built from, so a changed
pom resolves again and an unchanged one costs nothing.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

KAFKA_VERSION = "4.3.1"
LOG4J_VERSION = "2.25.3"
PROJECT_ROOT = Path(__file__).resolve().parent.parent


def cache_dir() -> Path:
    """The folder holding resolved jars; `KAFKA_MIGRATION_CACHE` overrides the default."""
    return Path(os.environ.get("KAFKA_MIGRATION_CACHE", PROJECT_ROOT / ".cache"))


@dataclass(frozen=True)
class Artifact:
    group_id: str
    artifact_id: str
    version: str

    def dependency_xml(self) -> str:
        return (
            "    <dependency>\n"
            f"      <groupId>{self.group_id}</groupId>\n"
            f"      <artifactId>{self.artifact_id}</artifactId>\n"
            f"      <version>{self.version}</version>\n"
            "    </dependency>\n"
        )


@dataclass(frozen=True)
class JarSet:
    """A named set of jars: the artifacts asked for and, optionally, which of their closure to keep."""

    name: str
    artifacts: tuple[Artifact, ...]
    include_artifact_ids: tuple[str, ...] = field(default=())

    def pom(self) -> str:
        deps = "".join(a.dependency_xml() for a in self.artifacts)
        return (
            '<project xmlns="http://maven.apache.org/POM/4.0.0">\n'
            "  <modelVersion>4.0.0</modelVersion>\n"
            "  <groupId>local.kafka-migration</groupId>\n"
            f"  <artifactId>{self.name}</artifactId>\n"
            "  <version>1</version>\n"
            "  <packaging>pom</packaging>\n"
            f"  <dependencies>\n{deps}  </dependencies>\n"
            "</project>\n"
        )


def kafka_jar_set(version: str = KAFKA_VERSION) -> JarSet:
    """The broker, its command-line tools and MirrorMaker 2, plus a log4j2 backend.

    Kafka's poms declare no log4j2 backend: without these jars the broker dies with
    NoClassDefFoundError before it logs anything.
    """
    kafka = [
        Artifact("org.apache.kafka", a, version)
        for a in ("kafka_2.13", "kafka-tools", "connect-mirror", "connect-runtime", "connect-json", "connect-api")
    ]
    log4j = [
        Artifact("org.apache.logging.log4j", a, LOG4J_VERSION)
        for a in ("log4j-core", "log4j-api", "log4j-slf4j-impl")
    ]
    return JarSet(name=f"kafka-{version}", artifacts=tuple(kafka + log4j))


def resolve(jar_set: JarSet) -> Path:
    """Return a folder holding the jar set's jars, resolving them with Maven when needed."""
    root = cache_dir() / "jars" / jar_set.name
    lib = root / "lib"
    pom_text = jar_set.pom() + ",".join(jar_set.include_artifact_ids)
    digest = hashlib.sha256(pom_text.encode()).hexdigest()
    marker = root / "resolved.sha256"
    if marker.exists() and marker.read_text() == digest and any(lib.glob("*.jar")):
        return lib

    if shutil.which("mvn") is None:
        raise RuntimeError("Maven (mvn) is not on PATH: install it (apt-get install maven) to resolve jars")
    root.mkdir(parents=True, exist_ok=True)
    if lib.exists():
        shutil.rmtree(lib)
    (root / "pom.xml").write_text(jar_set.pom())
    command = [
        "mvn", "-B", "-q", "-f", str(root / "pom.xml"),
        "dependency:copy-dependencies", "-DincludeScope=runtime", f"-DoutputDirectory={lib}",
    ]
    if jar_set.include_artifact_ids:
        command.append("-DincludeArtifactIds=" + ",".join(jar_set.include_artifact_ids))
    log.info("resolving jar set %s from Maven Central", jar_set.name)
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(
            f"Maven could not resolve jar set {jar_set.name}:\n{result.stdout[-4000:]}\n{result.stderr[-2000:]}"
        )
    marker.write_text(digest)
    return lib


def classpath(lib: Path) -> str:
    """A Java classpath naming every jar of a folder (the JVM expands `dir/*` itself)."""
    return str(lib / "*")
