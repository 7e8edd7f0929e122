"""KRaft Kafka clusters on loopback, from Maven-resolved jars, for the demo, tests and benchmarks.

A cluster lives in its own folder (`home`): `server.properties`, the data dir, `broker.log` and
`cluster.json` (ports, pids). The JVM is the process we start, so its pid is the broker's. By default a
cluster is one node, broker and controller; `brokers=N` adds broker-only nodes 2..N (kafka_local.brokers),
each in `home/node-K` with its own port, data dir, log and pid. Both build on kafka_local.cluster_model (the
recorded cluster, its server.properties) and kafka_local.java (the JVMs), so the imports go one way.
"""

from __future__ import annotations

import base64
import logging
import subprocess
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from kafka_local.brokers import restart_broker_nodes, start_broker_nodes
from kafka_local.cluster_model import (
    SECURED_USERS,
    STARTUP_TIMEOUT_S,
    SUPER_USER,
    ClusterStartError,
    KafkaCluster,
    free_port,
    server_properties,
)
from kafka_local.java import java_command, launch_broker, log_excerpt
from kafka_local.maven import kafka_jar_set, resolve
from kafka_local.nodes import process_running
from kafka_local.tls import TLS_KINDS, make_tls_files

# The harness's entry point for clusters: what starts and restarts them, and (re-exported from
# kafka_local.cluster_model) what a caller reads of a started cluster.
__all__ = [
    "SECURED_USERS",
    "SUPER_USER",
    "ClusterStartError",
    "KafkaCluster",
    "free_port",
    "restart_cluster",
    "start_cluster",
    "start_pair",
]

log = logging.getLogger(__name__)

_LOG4J2 = """\
status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.stdout.ref = STDOUT
logger.kafka.name = kafka
logger.kafka.level = info
logger.state.name = state.change.logger
logger.state.level = warn
logger.controller.name = org.apache.kafka.controller
logger.controller.level = warn
logger.cleaner.name = kafka.log.LogCleaner
logger.cleaner.level = warn
"""


def _new_cluster_id() -> str:
    # Kafka's Uuid text form: 16 random bytes, URL-safe base64 without padding. An id starting
    # with "-" would be read as an option by the storage tool, so draw again (as Kafka's own does).
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


def start_cluster(name: str, home: Path, secured: bool = False, tls: str = "", oauth_issuer: str = "",
                  brokers: int = 1) -> KafkaCluster:
    """Format and start a cluster in `home`; return once it serves clients (all its brokers).

    `tls` makes it a TLS cluster of that kind (kafka_local.tls), with its certificates made in `home/tls`;
    an `oauth` one validates tokens of the OAuth server at `oauth_issuer`. `brokers` > 1 adds broker-only
    nodes to node 1 (plaintext clusters only).
    """
    if tls and tls not in TLS_KINDS:
        raise ValueError(f"tls must be one of {', '.join(TLS_KINDS)}, got {tls!r}")
    if brokers > 1 and (secured or tls):
        raise ValueError(f"cluster {name}: several brokers ({brokers}) are for plaintext clusters only; "
                         "start a secured or TLS cluster with brokers=1")
    lib = resolve(kafka_jar_set())
    last_error: Exception | None = None
    for _attempt in range(3):  # another process may take a port between our probe and the bind
        try:
            cluster = _start_once(name, home, secured, lib, tls, oauth_issuer)
            if brokers > 1:
                start_broker_nodes(cluster, lib, brokers)
            return cluster
        except ClusterStartError as error:
            if "Address already in use" not in str(error):
                raise
            last_error = error
    raise ClusterStartError(f"cluster {name}: no free ports after 3 attempts: {last_error}")


def _start_once(name: str, home: Path, secured: bool, lib: Path, tls: str = "", oauth_issuer: str = "") -> KafkaCluster:
    home = home.resolve()
    if home.exists():
        subprocess.run(["rm", "-rf", str(home)], check=True)
    (home / "logs").mkdir(parents=True)
    port = free_port()
    controller_port = free_port()
    while controller_port == port:
        controller_port = free_port()
    cluster = KafkaCluster(name, str(home), port, controller_port, _new_cluster_id(), secured, tls=tls,
                           oauth_issuer=oauth_issuer)
    if tls:
        make_tls_files(cluster.tls_files.folder)
    (home / "log4j2.properties").write_text(_LOG4J2)
    props = home / "server.properties"
    props.write_text(server_properties(cluster, home / "data"))

    format_args = ["format", "-t", cluster.cluster_id, "-c", str(props)]
    if secured or tls:
        for user, password in SECURED_USERS.items():
            format_args += ["--add-scram", f"SCRAM-SHA-512=[name={user},password={password}]"]
    formatted = subprocess.run(
        java_command(lib, "kafka.tools.StorageTool", *format_args, tool=True, home=home),
        capture_output=True, text=True,
    )
    if formatted.returncode != 0:
        raise ClusterStartError(f"cluster {name}: formatting storage failed:\n{formatted.stdout}{formatted.stderr}")

    started = time.monotonic()
    process = launch_broker(lib, home, cluster.log_file, oauth_issuer)
    cluster.pid = process.pid
    cluster.save()
    _wait_until_serving(cluster, process)
    log.info("cluster %s serving on %s (pid %d) after %.1f s", name, cluster.bootstrap, cluster.pid,
             time.monotonic() - started)
    return cluster


def restart_cluster(cluster: KafkaCluster) -> KafkaCluster:
    """Start a stopped cluster again on its own files and ports (an outage ending): each of its nodes that is not
    running; return once it serves."""
    if cluster.is_running():
        return cluster
    lib = resolve(kafka_jar_set())
    if not process_running(cluster.pid, cluster.home):
        process = launch_broker(lib, Path(cluster.home), cluster.log_file, cluster.oauth_issuer)
        cluster.pid = process.pid
        cluster.save()
        _wait_until_serving(cluster, process)
    if cluster.brokers:
        restart_broker_nodes(cluster, lib)
    return cluster



def _wait_until_serving(cluster: KafkaCluster, process: subprocess.Popen[bytes]) -> None:
    from confluent_kafka.admin import AdminClient

    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    admin = AdminClient({**cluster.client_config(), "log_level": "0"})
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ClusterStartError(
                f"cluster {cluster.name}: broker exited with {process.returncode}:\n{log_excerpt(cluster.log_file)}"
            )
        try:
            metadata = admin.list_topics(timeout=1.0)
            if metadata.brokers:
                return
        except Exception:  # KafkaException while the broker is still starting
            time.sleep(0.3)
    cluster.stop()
    raise ClusterStartError(
        f"cluster {cluster.name}: not serving on {cluster.bootstrap} after {STARTUP_TIMEOUT_S:.0f} s:\n"
        f"{log_excerpt(cluster.log_file)}"
    )


def start_pair(root: Path, secured: bool = False, tls: str = "", oauth_issuer: str = "",
               brokers: int = 1) -> tuple[KafkaCluster, KafkaCluster]:
    """Start the `source` and `target` clusters side by side under `root` (`tls`, `brokers`: see start_cluster)."""
    resolve(kafka_jar_set())  # once, before two threads would race to resolve it
    with ThreadPoolExecutor(max_workers=2) as pool:
        source = pool.submit(start_cluster, "source", root / "source", secured, tls, oauth_issuer, brokers)
        target = pool.submit(start_cluster, "target", root / "target", secured, tls, oauth_issuer, brokers)
        try:
            return source.result(), target.result()
        except Exception:
            for future in (source, target):
                if future.exception() is None:
                    future.result().stop()
            raise
