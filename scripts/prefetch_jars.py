"""Resolve the Kafka broker jars and Spark's Kafka connector jars once, before tests or the demo."""

from kafka_local.maven import kafka_jar_set, resolve
from spark_jobs.packages import ivy_dir, kafka_connector
from spark_jobs.session import build_session

if __name__ == "__main__":
    print("kafka jars:", resolve(kafka_jar_set()))
    # Spark resolves its packages when a session starts: one start fills the Ivy cache.
    build_session("prefetch").stop()
    print("spark kafka connector:", kafka_connector(), "in", ivy_dir())
