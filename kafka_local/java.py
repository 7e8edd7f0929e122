"""The JVMs of a local cluster: the command line of a Kafka tool or broker, launching a broker, its log's errors.

Below both kafka_local.cluster (node 1) and kafka_local.brokers (nodes 2..N), which start brokers the same way.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from kafka_local.maven import classpath

__all__ = ["java_command", "launch_broker", "log_excerpt"]


def java_command(lib: Path, main_class: str, *args: str, tool: bool, home: Path,
                 oauth_issuer: str = "") -> list[str]:
    # Short-lived tool JVMs start faster with C1 only and the serial collector.
    # A broker's heap: 512 MiB unless KAFKA_LOCAL_BROKER_HEAP says (e.g. "1g" for many thousand partitions).
    jvm = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m"] if tool else [
        "-Xms256m", f"-Xmx{os.environ.get('KAFKA_LOCAL_BROKER_HEAP', '512m')}", "-XX:+UseG1GC",
        "-XX:MaxGCPauseMillis=20",
    ]
    return [
        "java", *jvm,
        f"-Dlog4j2.configurationFile={home / 'log4j2.properties'}",
        f"-Dkafka.logs.dir={home / 'logs'}",
        # Kafka 4 calls only the OAuth URLs listed here.
        *([f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={oauth_issuer}/jwks"] if oauth_issuer else []),
        "-cp", classpath(lib), main_class, *args,
    ]


def launch_broker(lib: Path, home: Path, log_file: Path, oauth_issuer: str = "") -> subprocess.Popen[bytes]:
    """The broker JVM of `home/server.properties`, its output appended to `log_file`."""
    with open(log_file, "ab") as log_out:
        return subprocess.Popen(
            java_command(lib, "kafka.Kafka", str(home / "server.properties"), tool=False, home=home,
                         oauth_issuer=oauth_issuer),
            stdout=log_out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,  # outlives the CLI that started it; Ctrl-C in a test run does not hit it
        )


def log_excerpt(path: Path, lines: int = 40) -> str:
    """The log's last `lines` lines, then its first error lines before them.

    A broker that fails at start-up logs its cause once and then well over 40 lines of shutting down, so the
    tail alone hides the cause (and with it "Address already in use", which the start retries on). The cause
    comes last, where a reader of a traceback, or of its tail, looks."""
    try:
        all_lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    last = all_lines[-lines:]
    causes = [line for line in all_lines[:-lines] if " ERROR " in line or " FATAL " in line][:5]
    return "\n".join([*last, "first errors of the log:", *causes] if causes else last)
