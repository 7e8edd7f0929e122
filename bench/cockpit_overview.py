"""How long the cockpit's overview of N plans takes to build, cold and with warm clients, on the local clusters.

Starts a source and a target, makes N plans (one topic of 4 partitions each, copied by a short engine run so
that every flow has progress, offset-syncs and a status history), then builds the overview's data as the
cockpit does (one `FlowView` per plan, their `snapshot()`s side by side): once cold (clients made, topics
read from their start), then repeatedly warm (clients kept, only what is new read). The HTML is rendered
each time too. Prints the cold time and the warm median, min and max.

    .venv/bin/python bench/cockpit_overview.py            # 10 plans
    .venv/bin/python bench/cockpit_overview.py --plans 20 --rounds 10
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins"))

from kafka_local.cluster import start_pair
from mirror_engine.observe import FlowView, flow_view
from mirror_engine.plan import plan_from_dict
from mirror_engine.replication import Replicator


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--plans", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    from kafka_migration.cockpit import pages

    with tempfile.TemporaryDirectory() as folder:
        source, target = start_pair(Path(folder))
        try:
            admin = AdminClient(source.client_config())
            names = [f"bench-cockpit-{i}" for i in range(args.plans)]
            for future in admin.create_topics([NewTopic(name, 4, 1) for name in names]).values():
                future.result()
            producer = Producer({**source.client_config(), "linger.ms": 20})
            for name in names:
                for i in range(2000):
                    producer.produce(name, f"value-{i}".encode(), f"k{i % 50}".encode(), i % 4)
            producer.flush(60)
            plans = []
            for name in names:
                plan = plan_from_dict({
                    "name": name, "source": {"alias": "src", "bootstrap_servers": source.bootstrap},
                    "target": {"alias": "tgt", "bootstrap_servers": target.bootstrap},
                    "topics": {"include": [name]}, "engine": {"status_interval_s": 1}})
                Replicator(plan, source.client_config(), target.client_config()).run(max_seconds=30,
                                                                                    until_caught_up=True)
                plans.append(plan)

            def overview(views: list[FlowView]) -> float:
                started = time.perf_counter()
                with ThreadPoolExecutor(max_workers=len(views)) as pool:  # as the cockpit reads them
                    rows = list(pool.map(lambda view: view.snapshot(), views))
                pages.overview_rows([{**row, "stage": "-"} for row in rows], "/kafka-migrations/")
                return time.perf_counter() - started

            views = [FlowView(plan, source.client_config(), target.client_config()) for plan in plans]
            cold = overview(views)
            flow_view.FRESH_FOR_S = 0  # every round reads anew, as a page refreshed after the cache expired
            warm = [overview(views) for _ in range(args.rounds)]
            for view in views:
                view.close()
            print(f"overview of {args.plans} plans: cold {cold:.2f} s; warm median {statistics.median(warm):.2f} s "
                  f"(min {min(warm):.2f}, max {max(warm):.2f}, {args.rounds} rounds)")
        finally:
            source.stop()
            target.stop()


if __name__ == "__main__":
    main()
