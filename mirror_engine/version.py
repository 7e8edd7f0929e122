"""The engine's version line (`mirror-engine --version`): a leaf, importing nothing of the engine."""

from __future__ import annotations


def version_line() -> str:
    """The engine's version, with the Kafka client and Python it runs on (what support asks first)."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    import confluent_kafka

    try:
        engine = version("kafka-migration")
    except PackageNotFoundError:  # run from a checkout that was never installed
        engine = "unknown (not installed: pip install .)"
    return (f"mirror-engine {engine} (confluent-kafka {confluent_kafka.version()}, librdkafka "
            f"{confluent_kafka.libversion()[0]}, Python {platform.python_version()})")
