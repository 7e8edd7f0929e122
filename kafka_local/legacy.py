"""ZooKeeper-era Kafka brokers (0.10 to 3.x) on loopback, each with its own ZooKeeper, from Maven Central jars.

The source side of a migration to Kafka 4: a single broker in ZooKeeper mode, optionally with SASL PLAIN and
the authorizer of its time (`kafka.security.auth.SimpleAclAuthorizer` before 2.4, `AclAuthorizer` from 2.4 on)
with `admin` as the super user, so its clients are the same as a secured KRaft cluster's (`client_config`).

The jars are Maven Central's `kafka_2.12` (before 2.4) or `kafka_2.13`, whose closure brings its own ZooKeeper;
ZooKeeper runs from the same jars (`QuorumPeerMain`). They log through log4j 1: reload4j is added. Kafka before
2.4 ships ZooKeeper 3.4, whose client cannot connect on Java 14 and later from 2.0 to 2.3
(`UnresolvedAddressException`, a JDK change 3.4 never followed): ZooKeeper 3.5.9's jars take its place for every
version before 2.4 (one rule; 1.x and 0.10 run with it too), and the broker still reports its own version.
Before 1.0 the broker needs `jaxb-api` (Java 11 dropped javax.xml.bind) and reads its SASL users from a JAAS
file only.
"""

from __future__ import annotations

import logging
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from kafka_local.cluster import _wait_until_serving
from kafka_local.cluster_model import (
    SECURED_USERS,
    SINGLE_BROKER,
    STARTUP_TIMEOUT_S,
    SUPER_USER,
    ClusterStartError,
    KafkaCluster,
    free_port,
    jaas_plain,
)
from kafka_local.java import log_excerpt
from kafka_local.maven import Artifact, JarSet, classpath, resolve
from kafka_local.nodes import reap

log = logging.getLogger(__name__)

RELOAD4J_VERSION = "1.2.25"
SLF4J_RELOAD4J_VERSION = "1.7.36"
# Java 17 cannot run ZooKeeper 3.4's client: brokers that ship it get this ZooKeeper instead.
ZOOKEEPER_FOR_JAVA17 = "3.5.9"

_LOG4J1 = """\
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.controller=WARN
log4j.logger.state.change.logger=WARN
log4j.logger.kafka.log.LogCleaner=WARN
log4j.logger.org.apache.zookeeper=WARN
"""


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".")[:2])


def ships_zookeeper_34(version: str) -> bool:
    """Kafka 1.x to 2.3 depend on ZooKeeper 3.4.x (2.4 moved to 3.5)."""
    return _version_tuple(version) < (2, 4)


def authorizer_class(version: str) -> str:
    """The ACL authorizer a broker of this version ships (`AclAuthorizer` replaced the old one in 2.4)."""
    if _version_tuple(version) >= (2, 4):
        return "kafka.security.authorizer.AclAuthorizer"
    return "kafka.security.auth.SimpleAclAuthorizer"


def legacy_jar_set(version: str) -> JarSet:
    """The broker of `version` (its own ZooKeeper, or 3.5.9 where it ships 3.4) and reload4j for its logs."""
    scala = "2.13" if _version_tuple(version) >= (2, 4) else "2.12"
    artifacts = [
        Artifact("org.apache.kafka", f"kafka_{scala}", version),
        Artifact("ch.qos.reload4j", "reload4j", RELOAD4J_VERSION),
        Artifact("org.slf4j", "slf4j-reload4j", SLF4J_RELOAD4J_VERSION),
    ]
    if _version_tuple(version) < (1, 0):
        # Before 1.0 the broker uses javax.xml.bind for its cluster id, which Java 11 no longer ships.
        artifacts.append(Artifact("javax.xml.bind", "jaxb-api", "2.3.1"))
    if ships_zookeeper_34(version):
        # A direct dependency is nearest: Maven takes it over the broker's 3.4.x.
        artifacts.append(Artifact("org.apache.zookeeper", "zookeeper", ZOOKEEPER_FOR_JAVA17))
    return JarSet(name=f"kafka-zk-{version}", artifacts=tuple(artifacts))


@dataclass
class LegacyCluster(KafkaCluster):
    """A ZooKeeper-mode broker and its ZooKeeper (`controller_port` is ZooKeeper's client port)."""

    version: str = ""
    zookeeper_pid: int = 0

    @property
    def zookeeper_connect(self) -> str:
        return f"127.0.0.1:{self.controller_port}"

    def stop(self, timeout_s: float = 30.0) -> None:
        """The broker first (it deregisters from ZooKeeper), then ZooKeeper."""
        super().stop(timeout_s)
        zookeeper = KafkaCluster(f"{self.name}-zookeeper", self.home, 0, 0, "", False, self.zookeeper_pid)
        zookeeper.stop(timeout_s)


def broker_properties(cluster: LegacyCluster, data_dir: Path) -> str:
    props = {
        "broker.id": "0",
        "zookeeper.connect": cluster.zookeeper_connect,
        "zookeeper.connection.timeout.ms": "30000",
        "log.dirs": str(data_dir),
        **SINGLE_BROKER,
        "group.initial.rebalance.delay.ms": "0",
        "log.cleaner.backoff.ms": "1000",
    }
    if cluster.secured:
        props.update({
            "listeners": f"SASL_PLAINTEXT://127.0.0.1:{cluster.port}",
            "advertised.listeners": f"SASL_PLAINTEXT://127.0.0.1:{cluster.port}",
            "security.inter.broker.protocol": "SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": "PLAIN",
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas_plain(SECURED_USERS),
            "authorizer.class.name": authorizer_class(cluster.version),
            "super.users": f"User:{SUPER_USER}",
            "allow.everyone.if.no.acl.found": "false",
        })
    else:
        props.update({
            "listeners": f"PLAINTEXT://127.0.0.1:{cluster.port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{cluster.port}",
        })
    return "".join(f"{key}={value}\n" for key, value in props.items())


def _java(lib: Path, home: Path, main_class: str, *args: str) -> list[str]:
    jaas = home / "kafka_server_jaas.conf"  # brokers before 1.0 read SASL users from a JAAS file only
    return [
        "java", "-Xms128m", "-Xmx512m", "-XX:+UseG1GC",
        *([f"-Djava.security.auth.login.config={jaas}"] if jaas.exists() else []),
        f"-Dlog4j.configuration=file:{home / 'log4j.properties'}",
        "-Dzookeeper.jmx.log4j.disable=true",  # ZooKeeper 3.4 with reload4j fails to register its JMX bean
        f"-Dkafka.logs.dir={home / 'logs'}",
        "-cp", classpath(lib), main_class, *args,
    ]


def start_legacy_cluster(name: str, home: Path, version: str, secured: bool = False) -> LegacyCluster:
    """Start ZooKeeper and a broker of Kafka `version` in `home`; return once the broker serves clients."""
    lib = resolve(legacy_jar_set(version))
    last_error: Exception | None = None
    for _attempt in range(3):  # another process may take a port between our probe and the bind
        try:
            return _start_once(name, home.resolve(), version, secured, lib)
        except ClusterStartError as error:
            if "Address already in use" not in str(error) and "BindException" not in str(error):
                raise
            last_error = error
    raise ClusterStartError(f"cluster {name}: no free ports after 3 attempts: {last_error}")


def _start_once(name: str, home: Path, version: str, secured: bool, lib: Path) -> LegacyCluster:
    if home.exists():
        subprocess.run(["rm", "-rf", str(home)], check=True)
    (home / "logs").mkdir(parents=True)
    port, zookeeper_port = free_port(), free_port()
    while zookeeper_port == port:
        zookeeper_port = free_port()
    cluster = LegacyCluster(name, str(home), port, zookeeper_port, "", secured, version=version)
    (home / "log4j.properties").write_text(_LOG4J1)
    zoo_cfg = home / "zoo.cfg"
    zoo_cfg.write_text(
        f"dataDir={home / 'zookeeper'}\nclientPort={zookeeper_port}\nclientPortAddress=127.0.0.1\n"
        "tickTime=2000\nmaxClientCnxns=0\nadmin.enableServer=false\n"
    )
    props = home / "server.properties"
    props.write_text(broker_properties(cluster, home / "data"))
    if secured and _version_tuple(version) < (1, 0):
        (home / "kafka_server_jaas.conf").write_text(f"KafkaServer {{\n  {jaas_plain(SECURED_USERS)}\n}};\n")

    started = time.monotonic()
    with open(home / "zookeeper.log", "ab") as zk_out:
        zookeeper = subprocess.Popen(
            _java(lib, home, "org.apache.zookeeper.server.quorum.QuorumPeerMain", str(zoo_cfg)),
            stdout=zk_out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )
    cluster.zookeeper_pid = zookeeper.pid
    cluster.save()
    try:
        _wait_for_port(zookeeper_port, zookeeper, home / "zookeeper.log", name)
        with open(cluster.log_file, "ab") as log_out:
            broker = subprocess.Popen(
                _java(lib, home, "kafka.Kafka", str(props)),
                stdout=log_out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            )
        cluster.pid = broker.pid
        cluster.save()
        _wait_until_serving(cluster, broker)
    except BaseException:
        cluster.stop()
        raise
    from confluent_kafka.admin import AdminClient

    cluster.cluster_id = AdminClient({**cluster.client_config(), "log_level": "0"}).list_topics(timeout=10).cluster_id
    cluster.save()
    log.info("Kafka %s (ZooKeeper mode) %s serving on %s after %.1f s", version, name, cluster.bootstrap,
             time.monotonic() - started)
    return cluster


def _wait_for_port(port: int, process: subprocess.Popen[bytes], log_file: Path, name: str) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            reap(process.pid)
            raise ClusterStartError(
                f"cluster {name}: ZooKeeper exited with {process.returncode}:\n{log_excerpt(log_file)}")
        with socket.socket() as probe:
            probe.settimeout(0.5)
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise ClusterStartError(f"cluster {name}: ZooKeeper not listening on {port} after {STARTUP_TIMEOUT_S:.0f} s")
