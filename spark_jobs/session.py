"""One place that builds a SparkSession with the Kafka connector matching the installed pyspark."""

from __future__ import annotations

import os
import re
import sys
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


def build_session(app_name: str, master: str | None = None, jars: list[str] | None = None) -> SparkSession:
    """A SparkSession with the Kafka connector: local[2] on loopback by default, any master by argument.

    Under spark-submit (master and jars given on its command line) pass nothing: the submitted
    configuration is kept.
    """
    builder = SparkSession.builder.appName(app_name)
    # spark-submit starts the JVM first and tells the Python driver its gateway port.
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ
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
        builder = builder.config("spark.jars", ",".join(jars if jars is not None else kafka_connector_jars()))
    return builder.getOrCreate()
