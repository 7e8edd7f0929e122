"""The Spark jobs' jars as Maven coordinates from the project's own settings, and the jars Spark resolved for them
remembered for the next session."""

from __future__ import annotations

import pyspark

from mirror_engine.security import read_security
from spark_jobs.packages import SparkPackages, job_packages, kafka_connector


def test_a_job_needs_the_connector_of_the_installed_spark_and_the_msk_login_only_for_msk():
    assert kafka_connector().startswith("org.apache.spark:spark-sql-kafka-0-10_2.")
    assert kafka_connector().endswith(f":{pyspark.__version__}")
    plain = read_security("dc1", {"bootstrap.servers": "broker:9093"})
    msk = read_security("msk", {"bootstrap.servers": "b-1.x.c2.kafka.eu-west-1.amazonaws.com:9098",
                                       "security.protocol": "SASL_SSL", "sasl.mechanism": "AWS_MSK_IAM"})
    assert job_packages(plain).packages == (kafka_connector(),)
    assert job_packages(plain, msk).packages[1].startswith("software.amazon.msk:aws-msk-iam-auth:")
    # What Spark ships is left out (its Hadoop client alone is 60 MB), and nothing of its own versions is named.
    assert "org.apache.hadoop:hadoop-client-runtime" in job_packages().excludes
    assert "com.fasterxml.jackson.core:jackson-databind" in job_packages().excludes


def test_the_ivy_cache_is_in_the_projects_cache_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKA_MIGRATION_CACHE", str(tmp_path))
    packages = job_packages()
    excludes = ",".join(packages.excludes)
    assert packages.conf() == {"spark.jars.packages": kafka_connector(), "spark.jars.excludes": excludes,
                               "spark.jars.ivy": str(tmp_path / "ivy")}
    assert packages.submit_args() == ["--packages", kafka_connector(), "--exclude-packages", excludes,
                                      "--conf", f"spark.jars.ivy={tmp_path / 'ivy'}"]


def test_resolved_jars_are_remembered_per_set_of_coordinates_while_they_exist(tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKA_MIGRATION_CACHE", str(tmp_path))
    jars = [tmp_path / "ivy" / "jars" / name for name in ("a.jar", "b.jar")]
    connector, other = SparkPackages(("g:a:1",), ("g:x",)), SparkPackages(("g:a:1", "g:b:2"), ("g:x",))
    assert connector.resolved_jars() is None
    jars[0].parent.mkdir(parents=True)
    for jar in jars:
        jar.write_bytes(b"PK")
    connector.remember_resolved(",".join(f"file://{jar}" for jar in jars))
    assert connector.resolved_jars() == [f"file://{jar}" for jar in jars]
    assert other.resolved_jars() is None  # another set of coordinates resolves on its own
    jars[1].unlink()
    assert connector.resolved_jars() is None  # a jar gone: Spark resolves again
