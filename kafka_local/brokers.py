"""Clusters of several brokers: broker-only nodes 2..N beside node 1 (broker and controller), one process each.

A broker holds about two open files per partition, and the open-file limit is per process: a cluster of N
brokers holds N times the partitions one broker could. Node K lives in `home/node-K` (its
`server.properties`, data dir and `broker.log`), listens on a port of its own, and reports to node 1's
controller (the same `controller.quorum.voters`); the storage of every node is formatted with the cluster's id.
"""

from __future__ import annotations

import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from kafka_local.cluster_model import STARTUP_TIMEOUT_S, ClusterStartError, KafkaCluster, free_port, server_properties
from kafka_local.java import java_command, launch_broker, log_excerpt
from kafka_local.nodes import BrokerNode


def node_properties(cluster: KafkaCluster, node: BrokerNode) -> str:
    """Node 1's settings with the node's id, port and data dir, in the broker role only (no controller listener)."""
    lines = server_properties(replace(cluster, port=node.port), Path(node.home) / "data").splitlines()
    props = dict(line.split("=", 1) for line in lines)
    listeners = [entry for entry in props["listeners"].split(",") if not entry.startswith("CONTROLLER:")]
    props.update({"process.roles": "broker", "node.id": str(node.node_id), "listeners": ",".join(listeners)})
    return "".join(f"{key}={value}\n" for key, value in props.items())


def start_broker_nodes(cluster: KafkaCluster, lib: Path, brokers: int) -> None:
    """Add broker-only nodes 2..`brokers` to the running node 1 of `cluster`; return once the cluster's metadata
    lists every broker. On failure every node of the cluster is stopped and ClusterStartError raised."""
    used = {cluster.port, cluster.controller_port}
    for node_id in range(2, brokers + 1):
        port = free_port()
        while port in used:
            port = free_port()
        used.add(port)
        cluster.brokers.append(BrokerNode(node_id, str(Path(cluster.home) / f"node-{node_id}"), port))
    try:
        with ThreadPoolExecutor(max_workers=len(cluster.brokers)) as pool:
            processes = list(pool.map(lambda node: _format_and_launch(cluster, node, lib), cluster.brokers))
        cluster.save()
        _wait_for_brokers(cluster, list(zip(cluster.brokers, processes, strict=True)))
    except BaseException:
        cluster.stop()
        raise


def restart_broker_nodes(cluster: KafkaCluster, lib: Path) -> None:
    """Start again, on their own files and ports, the broker-only nodes of `cluster` that are not running."""
    launched = []
    for node in cluster.brokers:
        if not node.is_running():
            process = launch_broker(lib, Path(node.home), node.log_file)
            node.pid = process.pid
            launched.append((node, process))
    cluster.save()
    _wait_for_brokers(cluster, launched)


def _format_and_launch(cluster: KafkaCluster, node: BrokerNode, lib: Path) -> subprocess.Popen[bytes]:
    home = Path(node.home)
    (home / "logs").mkdir(parents=True)
    (home / "log4j2.properties").write_text((Path(cluster.home) / "log4j2.properties").read_text())
    props = home / "server.properties"
    props.write_text(node_properties(cluster, node))
    formatted = subprocess.run(
        java_command(lib, "kafka.tools.StorageTool", "format", "-t", cluster.cluster_id, "-c", str(props),
                     tool=True, home=home),
        capture_output=True, text=True,
    )
    if formatted.returncode != 0:
        raise ClusterStartError(f"cluster {cluster.name} node {node.node_id}: formatting storage failed:\n"
                                f"{formatted.stdout}{formatted.stderr}")
    process = launch_broker(lib, home, node.log_file)
    node.pid = process.pid  # at once: a failure of another node stops this one
    return process


def _wait_for_brokers(cluster: KafkaCluster, launched: list[tuple[BrokerNode, subprocess.Popen[bytes]]]) -> None:
    """Wait until the cluster's metadata lists all its brokers; raise if one of those `launched` exits."""
    from confluent_kafka.admin import AdminClient

    expected = 1 + len(cluster.brokers)
    admin = AdminClient({**cluster.client_config(), "log_level": "0"})
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    seen = 0
    while time.monotonic() < deadline:
        for node, process in launched:
            if process.poll() is not None:
                raise ClusterStartError(f"cluster {cluster.name} node {node.node_id}: broker exited with "
                                        f"{process.returncode}:\n{log_excerpt(node.log_file)}")
        try:
            seen = len(admin.list_topics(timeout=1.0).brokers)
        except Exception:  # KafkaException while a broker is still starting
            seen = 0
        if seen >= expected:
            return
        time.sleep(0.3)
    tails = "\n".join(f"node {node.node_id}:\n{log_excerpt(node.log_file, 15)}" for node in cluster.brokers)
    raise ClusterStartError(f"cluster {cluster.name}: {seen} of {expected} brokers registered after "
                            f"{STARTUP_TIMEOUT_S:.0f} s:\n{tails}")
