"""One place that builds a SparkSession with the jars a job needs (`spark_jobs.packages`)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from pyspark.sql import SparkSession

from spark_jobs.packages import SparkPackages, job_packages

LOCAL_HEAP = "2g"  # the JVM heap of a local-mode session (driver and executor in one)


def build_session(app_name: str, master: str | None = None,
                  packages: SparkPackages | Callable[[], SparkPackages] | None = None) -> SparkSession:
    """A SparkSession with the Kafka connector: local[2] on loopback by default, any master by argument; a local
    session's JVM gets a heap of `LOCAL_HEAP`.

    Under spark-submit (master and packages given on its command line) pass nothing: the submitted
    configuration is kept. `packages` may be a function, called only when the session chooses its jars;
    by default the Kafka connector alone. Spark resolves them at the first start; later starts name the jars
    it resolved (`SparkPackages.resolved_jars`).
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
                # The tasks run in this JVM: with Spark's default 1 GiB heap, a 3,000,000-record backfill spent a
                # quarter of its tasks' time in JVM garbage collection (the Kafka source's fetch buffers, rows).
                .config("spark.driver.memory", LOCAL_HEAP)
            )
        # Chosen only when this session chooses its own jars.
        chosen = (packages() if callable(packages) else packages) or job_packages()
        jars = chosen.resolved_jars()
        if jars:  # resolved by Spark for an earlier session: no Ivy resolution at this start
            return builder.config("spark.jars", ",".join(jars)).getOrCreate()
        for name, value in chosen.conf().items():
            builder = builder.config(name, value)
        session = builder.getOrCreate()
        conf = session.sparkContext.getConf()
        if conf.get("spark.jars.packages", "") == chosen.conf()["spark.jars.packages"]:  # not an earlier session's
            chosen.remember_resolved(conf.get("spark.jars", ""))
        return session
    return builder.getOrCreate()

