"""Resolve the Kafka broker jars and Spark's Kafka connector jars once, before tests or the demo."""

from kafka_local.maven import kafka_jar_set, resolve
from spark_jobs.session import kafka_connector_jars

if __name__ == "__main__":
    print("kafka jars:", resolve(kafka_jar_set()))
    print("spark kafka connector jars:", len(kafka_connector_jars()))
