"""`mirror-engine --version`: what support asks first (the engine's version, its Kafka client and Python)."""

from __future__ import annotations

import platform
import subprocess
import sys

import confluent_kafka


def test_version_prints_the_engine_its_kafka_client_and_python_and_exits_0():
    result = subprocess.run([sys.executable, "-m", "mirror_engine.cli", "--version"], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    line = result.stdout.strip()
    assert line.startswith("mirror-engine ")
    assert f"confluent-kafka {confluent_kafka.version()}" in line
    assert f"librdkafka {confluent_kafka.libversion()[0]}" in line
    assert f"Python {platform.python_version()}" in line
