"""The jars a Spark job needs, as Maven coordinates: Spark resolves them itself (`spark.jars.packages`, the
`--packages` of spark-submit), with their dependencies, from Maven Central into an Ivy cache.

- Spark's Kafka connector, `spark-sql-kafka-0-10`, at the installed pyspark's Spark and Scala versions;
- `software.amazon.msk:aws-msk-iam-auth`, for a job reading a cluster that logs in with AWS MSK IAM.

What Spark already ships is excluded (Hadoop's client, compression codecs, Jackson, SLF4J): a second copy on the
class path would add 60 MB to every session or clash with Spark's own. The Ivy cache is `<cache>/ivy`, the
project's cache folder (`KAFKA_MIGRATION_CACHE`, or `.cache/` beside the project's code), so a session starts
without the network once the jars are there (`scripts/prefetch_jars.py` fetches the connector at setup).

Ivy resolves again at every start, even from its cache: 0.3 s on an idle 2-core machine, 1 to 4 s on a loaded
one. So a session this project starts itself remembers the jars Spark resolved for a set of coordinates
(`resolved-<digest>.txt` beside the cache) and the next one names them directly (`spark.jars`); spark-submit,
whose application start costs far more, always resolves.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

MSK_IAM_AUTH_VERSION = "2.3.9"
# Dependencies of the connector that Spark's own class path already holds.
PROVIDED_BY_SPARK = (
    "org.apache.hadoop:hadoop-client-api",
    "org.apache.hadoop:hadoop-client-runtime",
    "org.xerial.snappy:snappy-java",
    "at.yawk.lz4:lz4-java",
    "org.lz4:lz4-java",
    "com.github.luben:zstd-jni",
    "org.slf4j:slf4j-api",
    "com.google.code.findbugs:jsr305",
    "org.scala-lang.modules:scala-parallel-collections_{scala}",
    "com.fasterxml.jackson.core:jackson-annotations",
    "com.fasterxml.jackson.core:jackson-core",
    "com.fasterxml.jackson.core:jackson-databind",
)
_PROJECT_ROOT = Path(__file__).resolve().parent.parent


def spark_and_scala_versions() -> tuple[str, str]:
    """The installed pyspark's Spark version and Scala binary version (from its bundled jars)."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    for jar in jars.glob("scala-library-*.jar"):
        match = re.match(r"scala-library-(\d+\.\d+)\.", jar.name)
        if match:
            return pyspark.__version__, match.group(1)
    raise RuntimeError(f"cannot tell pyspark's Scala version: no scala-library jar in {jars}")


def ivy_dir() -> Path:
    """Spark's Ivy cache of resolved jars, in the project's cache folder (`KAFKA_MIGRATION_CACHE` overrides)."""
    return Path(os.environ.get("KAFKA_MIGRATION_CACHE", _PROJECT_ROOT / ".cache")) / "ivy"


@dataclass(frozen=True)
class SparkPackages:
    """Maven coordinates for Spark to resolve, and the dependencies it must leave out."""

    packages: tuple[str, ...]
    excludes: tuple[str, ...]

    def conf(self) -> dict[str, str]:
        """The session settings that put these jars on the driver's and executors' class path."""
        return {"spark.jars.packages": ",".join(self.packages), "spark.jars.excludes": ",".join(self.excludes),
                "spark.jars.ivy": str(ivy_dir())}

    def resolved_jars(self) -> list[str] | None:
        """The jars Spark resolved for these coordinates before (`remember_resolved`), if every one is still there."""
        try:
            jars = self._resolved_file().read_text().split()
        except FileNotFoundError:
            return None
        return jars if jars and all(Path(urlparse(jar).path).is_file() for jar in jars) else None

    def remember_resolved(self, spark_jars: str) -> None:
        """Keep `spark.jars` as a session that resolved these coordinates has it, for the next session."""
        jars = [jar for jar in spark_jars.split(",") if jar]
        if not jars:
            return
        target = self._resolved_file()
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f"{target.name}.{os.getpid()}")
        partial.write_text("\n".join(jars) + "\n")
        partial.replace(target)  # whole or not at all, whoever reads it meanwhile

    def _resolved_file(self) -> Path:
        digest = hashlib.sha256("\n".join([*self.packages, "", *self.excludes]).encode()).hexdigest()[:16]
        return ivy_dir() / f"resolved-{digest}.txt"

    def submit_args(self) -> list[str]:
        """The same as spark-submit arguments."""
        return ["--packages", ",".join(self.packages), "--exclude-packages", ",".join(self.excludes),
                "--conf", f"spark.jars.ivy={ivy_dir()}"]


def kafka_connector() -> str:
    """`spark-sql-kafka-0-10` at the installed pyspark's versions."""
    spark, scala = spark_and_scala_versions()
    return f"org.apache.spark:spark-sql-kafka-0-10_{scala}:{spark}"


def job_packages(*models: object) -> SparkPackages:
    """What a job reading these clusters (`ClusterSecurity` models) needs: the Kafka connector, and the MSK IAM
    login when one uses it."""
    from mirror_engine.security import MskIamLogin

    _spark, scala = spark_and_scala_versions()
    packages = [kafka_connector()]
    if any(isinstance(getattr(model, "login", None), MskIamLogin) for model in models):
        packages.append(f"software.amazon.msk:aws-msk-iam-auth:{MSK_IAM_AUTH_VERSION}")
    return SparkPackages(tuple(packages), tuple(name.format(scala=scala) for name in PROVIDED_BY_SPARK))
