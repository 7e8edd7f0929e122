"""ListOffsets asked of a fresh admin client, at once and after its first connection (`first_connection`).

librdkafka (2.10 and later) drops its bootstrap servers' connections once their first answer names the cluster's
brokers; a request to partition leaders made by a fresh client at that moment may find no broker up and wait for the
client's next look, a second later. The engine makes fresh admin clients for reads it runs side by side (both bounds
of every partition, each internal topic's reader), mostly at its start. This starts a cluster of `--brokers` brokers
(or uses `--bootstrap`), makes a topic of `--partitions` partitions, then, `--tries` times, alternated: a fresh
client asks the latest offsets of every partition at once ("at once"), or after `first_connection` ("connected
first"). It prints how many asks took over 0.5 s, the median and the slowest, each counted from the client's
creation.

    .venv/bin/python bench/fresh_client_offsets.py --tries 100
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]

from confluent_kafka import TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec  # noqa: E402
from harness import create_topics, print_table, stop_clusters  # noqa: E402

from kafka_local.cluster import start_cluster  # noqa: E402
from mirror_engine.kafka import admin_client, first_connection, wait_until_served  # noqa: E402

TOPIC = "fresh-client-offsets"


def _ask(config: dict[str, str], partitions: list[TopicPartition], connect_first: bool) -> float:
    began = time.monotonic()
    admin = admin_client(config)
    if connect_first:
        first_connection(admin, 15)
    for future in admin.list_offsets({tp: OffsetSpec.latest() for tp in partitions}, request_timeout=30).values():
        future.result()
    return time.monotonic() - began


def _measure(config: dict[str, str], partitions: int, tries: int) -> None:
    asked = [TopicPartition(TOPIC, p) for p in range(partitions)]
    kinds: dict[str, Callable[[], float]] = {
        "at once": lambda: _ask(config, asked, connect_first=False),
        "connected first": lambda: _ask(config, asked, connect_first=True),
    }
    seconds: dict[str, list[float]] = {kind: [] for kind in kinds}
    for _ in range(tries):
        for kind, ask in kinds.items():
            seconds[kind].append(ask())
    rows = [[kind, f"{sum(1 for s in taken if s > 0.5)} of {len(taken)}", f"{statistics.median(taken):.3f}",
             f"{max(taken):.2f}"] for kind, taken in seconds.items()]
    print_table(f"ListOffsets of {partitions} partitions by a fresh admin client",
                ["asked", "over 0.5 s", "median, s", "slowest, s"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tries", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=500)
    parser.add_argument("--brokers", type=int, default=2)
    parser.add_argument("--bootstrap", help="a running cluster's bootstrap servers (else one is started)")
    args = parser.parse_args()
    if args.bootstrap:
        config = {"bootstrap.servers": args.bootstrap}
        admin = AdminClient(config)
        if TOPIC not in admin.list_topics(timeout=15).topics:
            admin.create_topics([NewTopic(TOPIC, args.partitions, 1)])[TOPIC].result()
            wait_until_served(admin, [TOPIC])
        _measure(config, args.partitions, args.tries)
        return
    with tempfile.TemporaryDirectory(prefix="fresh-client-") as home:
        cluster = start_cluster("fresh", Path(home) / "cluster", brokers=args.brokers)
        try:
            create_topics(cluster, [TOPIC], args.partitions)
            _measure(cluster.client_config(), args.partitions, args.tries)
        finally:
            stop_clusters([cluster])


if __name__ == "__main__":
    main()
