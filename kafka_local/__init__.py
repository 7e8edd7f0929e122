"""Local Kafka clusters (KRaft, Maven-resolved Apache Kafka jars) for the demo, tests and benchmarks."""
