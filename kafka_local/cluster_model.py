"""A local cluster as recorded (`KafkaCluster`, its `cluster.json`), its users, its `server.properties`, free ports.

What kafka_local.cluster (node 1) and kafka_local.brokers (nodes 2..N) both build on; it starts nothing.
"""

from __future__ import annotations

import json
import random
import socket
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kafka_local.nodes import BrokerNode, process_running, stop_process
from kafka_local.tls import TlsFiles, broker_tls_properties, client_tls_config

__all__ = [
    "SECURED_USERS",
    "SINGLE_BROKER",
    "STARTUP_TIMEOUT_S",
    "SUPER_USER",
    "ClusterStartError",
    "KafkaCluster",
    "free_port",
    "jaas_plain",
    "server_properties",
]

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


class ClusterStartError(RuntimeError):
    """A broker did not come up; the message carries its log's errors and tail."""


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


def jaas_plain(users: dict[str, str]) -> str:
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
                                         jaas_plain(SECURED_USERS), cluster.oauth_issuer)
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
            "listener.name.controller.plain.sasl.jaas.config": jaas_plain(SECURED_USERS),
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas_plain(SECURED_USERS),
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
