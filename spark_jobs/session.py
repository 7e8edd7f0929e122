"""One place that builds a SparkSession with the Kafka connector matching the installed pyspark."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import SparkSession

# The connector's own jars plus the two it needs beyond Spark's classpath. Copying the whole
# transitive closure would add an older scala-library and duplicate Hadoop jars.
CONNECTOR_ARTIFACTS = ("spark-token-provider-kafka-0-10", "kafka-clients", "commons-pool2")


def spark_and_scala_versions() -> tuple[str, str]:
    """The installed pyspark's Spark version and Scala binary version (from its bundled jars)."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    for jar in jars.glob("scala-library-*.jar"):
        match = re.match(r"scala-library-(\d+\.\d+)\.", jar.name)
        if match:
            return pyspark.__version__, match.group(1)
    raise RuntimeError(f"cannot tell pyspark's Scala version: no scala-library jar in {jars}")


def kafka_connector_jars() -> list[str]:
    """Paths of `spark-sql-kafka-0-10` and its needed jars, resolved from Maven Central and cached."""
    from kafka_local.maven import Artifact, JarSet, resolve

    spark, scala = spark_and_scala_versions()
    connector = f"spark-sql-kafka-0-10_{scala}"
    jar_set = JarSet(
        name=f"spark-kafka-{spark}-{scala}",
        artifacts=(Artifact("org.apache.spark", connector, spark),),
        include_artifact_ids=(connector, f"{CONNECTOR_ARTIFACTS[0]}_{scala}", *CONNECTOR_ARTIFACTS[1:]),
    )
    lib = resolve(jar_set)
    return sorted(str(jar) for jar in lib.glob("*.jar"))


MSK_IAM_AUTH_VERSION = "2.3.9"
# Spark brings its own Jackson and SLF4J; a second copy on the class path would clash with them.
_PROVIDED_BY_SPARK = ("jackson-annotations-", "jackson-core-", "jackson-databind-", "slf4j-")


def msk_iam_jars() -> list[str]:
    """`software.amazon.msk:aws-msk-iam-auth` and the AWS SDK parts it needs, for AWS_MSK_IAM logins of Spark's
    Kafka source (resolved from Maven Central and cached, like the connector)."""
    from kafka_local.maven import Artifact, JarSet, resolve

    lib = resolve(JarSet(name=f"aws-msk-iam-auth-{MSK_IAM_AUTH_VERSION}",
                         artifacts=(Artifact("software.amazon.msk", "aws-msk-iam-auth", MSK_IAM_AUTH_VERSION),)))
    return sorted(str(jar) for jar in lib.glob("*.jar") if not jar.name.startswith(_PROVIDED_BY_SPARK))


def job_jars(*models: object) -> list[str]:
    """The jars a job reading these clusters needs: the Kafka connector, and the MSK IAM login when one uses it."""
    from mirror_engine.security import MskIamLogin

    jars = kafka_connector_jars()
    if any(isinstance(getattr(model, "login", None), MskIamLogin) for model in models):
        jars += msk_iam_jars()
    return jars


def build_session(app_name: str, master: str | None = None,
                  jars: list[str] | Callable[[], list[str]] | None = None,
                  executor_java_options: str = "") -> SparkSession:
    """A SparkSession with the Kafka connector: local[2] on loopback by default, any master by argument.

    Under spark-submit (master and jars given on its command line) pass nothing: the submitted
    configuration is kept. `jars` may be a function, called only when the session chooses its jars.
    `executor_java_options` are added to the executors' JVM options (after any given to spark-submit).
    """
    builder = SparkSession.builder.appName(app_name)
    # spark-submit starts the JVM first and tells the Python driver its gateway port.
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ
    if executor_java_options:
        key = "spark.executor.extraJavaOptions"
        builder = builder.config(key, f"{_submitted_conf(key)} {executor_java_options}".strip())
    if master or not submitted:
        master = master or "local[2]"
        builder = builder.master(master)
        if master.startswith("local"):
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            # Python workers must be this interpreter (its packages), not whatever python3 is on PATH.
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            builder = (
                builder.config("spark.driver.host", "127.0.0.1")
                .config("spark.driver.bindAddress", "127.0.0.1")
                .config("spark.ui.enabled", os.environ.get("SPARK_UI_ENABLED", "false"))
                .config("spark.sql.shuffle.partitions", "4")
            )
        chosen = jars() if callable(jars) else jars  # resolved only when this session chooses its own jars
        builder = builder.config("spark.jars", ",".join(chosen if chosen is not None else kafka_connector_jars()))
    return builder.getOrCreate()


def _submitted_conf(key: str) -> str:
    """A setting given to spark-submit (or spark-defaults.conf), read before the session starts; "" without one."""
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return ""
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()  # connects to spark-submit's JVM, which holds the submitted settings
    return SparkConf().get(key, "") or ""
