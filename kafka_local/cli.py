"""`kafka-local start|stop|status`: a named pair of local clusters, `source` and `target`, for people.

State lives in `.local-kafka/<pair>/` (or `--root`); the clusters keep running after the command
returns, until `kafka-local stop`.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from kafka_local.cluster import KafkaCluster, start_pair
from kafka_local.maven import PROJECT_ROOT

CLUSTER_NAMES = ("source", "target")


def _clusters(root: Path) -> list[KafkaCluster]:
    found = (KafkaCluster.load(root / name) for name in CLUSTER_NAMES)
    return [cluster for cluster in found if cluster is not None]


def cmd_start(root: Path, secured: bool, brokers: int = 1) -> int:
    running = [c for c in _clusters(root) if c.is_running()]
    if running:
        print(f"already running under {root}: " + ", ".join(f"{c.name}={c.bootstrap}" for c in running))
        return 1
    source, target = start_pair(root, secured=secured, brokers=brokers)
    print(json.dumps({"source": source.bootstrap, "target": target.bootstrap, "secured": secured,
                      "brokers": brokers}))
    return 0


def cmd_stop(root: Path) -> int:
    for cluster in _clusters(root):
        cluster.stop()
        print(f"stopped {cluster.name} ({cluster.bootstrap})")
    return 0


def cmd_status(root: Path) -> int:
    clusters = _clusters(root)
    if not clusters:
        print(f"no clusters recorded under {root}")
        return 1
    for cluster in clusters:
        state = "running" if cluster.is_running() else "stopped"
        print(f"{cluster.name:<8} {state:<8} {cluster.bootstrap:<22} pid={cluster.pid} log={cluster.log_file}")
        for node in cluster.brokers:
            state = "running" if node.is_running() else "stopped"
            print(f"  node {node.node_id:<3} {state:<8} 127.0.0.1:{node.port:<12} pid={node.pid} log={node.log_file}")
    return 0 if all(c.is_running() for c in clusters) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kafka-local", description=__doc__)
    parser.add_argument("command", choices=["start", "stop", "status"])
    parser.add_argument("--pair", default="default", help="name of the pair (a folder under --root)")
    parser.add_argument("--root", type=Path, default=PROJECT_ROOT / ".local-kafka")
    parser.add_argument("--secured", action="store_true", help="SASL PLAIN/SCRAM with ACLs enforced")
    parser.add_argument("--brokers", type=int, default=1,
                        help="brokers per cluster (node 1 also the controller; plaintext clusters only)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    root = args.root / args.pair
    if args.command == "start":
        return cmd_start(root, args.secured, args.brokers)
    if args.command == "stop":
        return cmd_stop(root)
    return cmd_status(root)


if __name__ == "__main__":
    sys.exit(main())
