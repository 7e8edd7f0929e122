"""KRaft Kafka clusters on loopback, from Maven-resolved jars, for the demo, tests and benchmarks.

A cluster lives in its own folder (`home`): `server.properties`, the data dir, `broker.log` and
`cluster.json` (ports, pids). The JVM is the process we start, so its pid is the broker's. By default a
cluster is one node, broker and controller; `brokers=N` adds broker-only nodes 2..N (kafka_local.brokers),
each in `home/node-K` with its own port, data dir, log and pid.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import random
import socket
import subprocess
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kafka_local.maven import classpath, kafka_jar_set, resolve
from kafka_local.nodes import BrokerNode, process_running, stop_process
from kafka_local.tls import TLS_KINDS, TlsFiles, broker_tls_properties, client_tls_config, make_tls_files

log = logging.getLogger(__name__)

# Local-only credentials of secured test clusters. `admin` is the super user.
SECURED_USERS: dict[str, str] = {
    "admin": "admin-secret",
    "alice": "alice-secret",
    "bob": "bob-secret",
    "mirror": "mirror-secret",
    "reader": "reader-secret",  # for tests of a least-privilege source principal
}
SUPER_USER = "admin"
STARTUP_TIMEOUT_S = 90.0

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


class ClusterStartError(RuntimeError):
    """A broker did not come up; the message carries the tail of its log."""


@dataclass
class KafkaCluster:
    """A running (or recorded) local cluster."""

    name: str
    home: str
    port: int
    controller_port: int
    cluster_id: str
    secured: bool
    pid: int = 0
    tls: str = ""  # "", or a TLS kind of kafka_local.tls (mtls, scram, oauth)
    oauth_issuer: str = ""  # the OAuth server validating tokens (tls == "oauth")
    brokers: list[BrokerNode] = field(default_factory=list)  # nodes 2..N; node 1 is this one (port, pid)

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{port}" for port in [self.port, *(node.port for node in self.brokers)])

    @property
    def log_file(self) -> Path:
        return Path(self.home) / "broker.log"

    def client_config(self, user: str | None = None, mechanism: str = "PLAIN") -> dict[str, str]:
        """confluent-kafka settings to reach this cluster; on a secured one as `user` (default: admin)."""
        config = {"bootstrap.servers": self.bootstrap}
        if self.tls:
            user = user or SUPER_USER
            return {**config, **client_tls_config(self.tls, self.tls_files, user, SECURED_USERS[user],
                                                  self.oauth_issuer)}
        if self.secured:
            user = user or SUPER_USER
            config.update({
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": mechanism,
                "sasl.username": user,
                "sasl.password": SECURED_USERS[user],
            })
        return config

    @property
    def tls_files(self) -> TlsFiles:
        return TlsFiles(Path(self.home) / "tls")

    def is_running(self) -> bool:
        """Every node's process is alive."""
        return process_running(self.pid, self.home) and all(node.is_running() for node in self.brokers)

    def stop(self, timeout_s: float = 30.0) -> None:
        """SIGTERM every node and wait, broker-only nodes first (side by side, while the controller they report
        to still runs), then node 1; SIGKILL a node that does not stop in time."""
        if self.brokers:
            with ThreadPoolExecutor(max_workers=len(self.brokers)) as pool:
                list(pool.map(lambda node: stop_process(f"{self.name} node {node.node_id}", node.pid, node.home,
                                                         timeout_s), self.brokers))
        stop_process(self.name, self.pid, self.home, timeout_s)

    def save(self) -> None:
        (Path(self.home) / "cluster.json").write_text(json.dumps(asdict(self), indent=2))

    @classmethod
    def load(cls, home: Path) -> KafkaCluster | None:
        state = home / "cluster.json"
        if not state.exists():
            return None
        data = json.loads(state.read_text())
        data["brokers"] = [BrokerNode(**node) for node in data.get("brokers", [])]
        return cls(**data)


def free_port() -> int:
    """A free loopback port below the ephemeral range (ports above 32767 failed to bind here)."""
    for _ in range(200):
        port = random.randint(20000, 32000)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free loopback port found between 20000 and 32000")


def _new_cluster_id() -> str:
    # Kafka's Uuid text form: 16 random bytes, URL-safe base64 without padding. An id starting
    # with "-" would be read as an option by the storage tool, so draw again (as Kafka's own does).
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


def _jaas_plain(users: dict[str, str]) -> str:
    entries = " ".join(f'user_{name}="{password}"' for name, password in users.items())
    return (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{SUPER_USER}" password="{users[SUPER_USER]}" {entries};'
    )


# What every single-broker cluster of the harness sets, KRaft or ZooKeeper-era: one replica of everything.
SINGLE_BROKER = {
    "num.partitions": "1",
    "auto.create.topics.enable": "false",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "5",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "5",
}


def server_properties(cluster: KafkaCluster, data_dir: Path) -> str:
    common = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@127.0.0.1:{cluster.controller_port}",
        "controller.listener.names": "CONTROLLER",
        "log.dirs": str(data_dir),
        **SINGLE_BROKER,
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        # Fast compaction in tests that need gaps in offsets.
        "log.cleaner.backoff.ms": "1000",
        # A fetch that waits for records is watched under each of its partitions until enough such fetches have
        # ended (1,000 by default): a consumer idle on 3,300 partitions of a broker kept 2.3 million stale entries,
        # the whole 1 GiB heap, and the broker spent two cores in GC (bench/scale.py at 10,000 partitions).
        "fetch.purgatory.purge.interval.requests": "100",
    }
    if cluster.tls:
        security = broker_tls_properties(cluster.tls, cluster.port, cluster.controller_port, cluster.tls_files,
                                         _jaas_plain(SECURED_USERS), cluster.oauth_issuer)
    elif cluster.secured:
        security = {
            "listeners": f"SASL_PLAINTEXT://127.0.0.1:{cluster.port},CONTROLLER://127.0.0.1:{cluster.controller_port}",
            "advertised.listeners": f"SASL_PLAINTEXT://127.0.0.1:{cluster.port}",
            "inter.broker.listener.name": "SASL_PLAINTEXT",
            # The controller listener must speak SASL too: a PLAINTEXT one registers the node as
            # User:ANONYMOUS, which the authorizer denies, and the broker never finishes starting.
            "listener.security.protocol.map": "CONTROLLER:SASL_PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "sasl.mechanism.controller.protocol": "PLAIN",
            "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
            "listener.name.controller.plain.sasl.jaas.config": _jaas_plain(SECURED_USERS),
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": _jaas_plain(SECURED_USERS),
            "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config":
                "org.apache.kafka.common.security.scram.ScramLoginModule required;",
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": f"User:{SUPER_USER}",
            "allow.everyone.if.no.acl.found": "false",
        }
    else:
        security = {
            "listeners": f"PLAINTEXT://127.0.0.1:{cluster.port},CONTROLLER://127.0.0.1:{cluster.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{cluster.port}",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        }
    return "".join(f"{key}={value}\n" for key, value in {**common, **security}.items())


def _java_command(lib: Path, main_class: str, *args: str, tool: bool, home: Path,
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
                from kafka_local.brokers import start_broker_nodes

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
        _java_command(lib, "kafka.tools.StorageTool", *format_args, tool=True, home=home),
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
        from kafka_local.brokers import restart_broker_nodes

        restart_broker_nodes(cluster, lib)
    return cluster


def launch_broker(lib: Path, home: Path, log_file: Path, oauth_issuer: str = "") -> subprocess.Popen[bytes]:
    """The broker JVM of `home/server.properties`, its output appended to `log_file`."""
    with open(log_file, "ab") as log_out:
        return subprocess.Popen(
            _java_command(lib, "kafka.Kafka", str(home / "server.properties"), tool=False, home=home,
                          oauth_issuer=oauth_issuer),
            stdout=log_out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,  # outlives the CLI that started it; Ctrl-C in a test run does not hit it
        )


def _wait_until_serving(cluster: KafkaCluster, process: subprocess.Popen[bytes]) -> None:
    from confluent_kafka.admin import AdminClient

    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    admin = AdminClient({**cluster.client_config(), "log_level": "0"})
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ClusterStartError(
                f"cluster {cluster.name}: broker exited with {process.returncode}:\n{_tail(cluster.log_file)}"
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
        f"{_tail(cluster.log_file)}"
    )


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


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
