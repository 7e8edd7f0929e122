"""How fast and how exactly a consumer group moves to the target, measured in one run.

A topic of 8 partitions is written continuously on the source while the engine copies it. Groups
read part of it and stop (some far behind the live end). For each group, one of two ways:
- on-demand switch (`mirror-engine switch-group`): time from the group being empty on the source to
  its exactly translated offsets committed on the target and verified record by record;
- checkpoints at the default interval (`mirror-engine checkpoint`, cutover.checkpoint_interval_s):
  time from the group being empty to the target group's offsets being the exact translation.
Then the group reads on the target and the records it had already read on the source are counted
(re-read, must be 0) as are records it skipped (must be 0).

    .venv/bin/python bench/switch.py             # 4 groups per way
    .venv/bin/python bench/switch.py --groups 1 --records 2000
"""

from __future__ import annotations

import argparse
import logging
import statistics
import tempfile
import threading
import time
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_local.cluster import KafkaCluster, start_pair
from mirror_engine.cutover import Checkpointer, GroupSwitcher
from mirror_engine.flow import FlowMapping
from mirror_engine.kafka import committed_offsets
from mirror_engine.plan import MigrationPlan, plan_from_dict
from mirror_engine.replication import Replicator

PARTITIONS = 8
TOPIC = "payments"


def _plan(source: KafkaCluster, target: KafkaCluster) -> MigrationPlan:
    return plan_from_dict({
        "name": "switch-bench",
        "source": {"alias": "src", "bootstrap_servers": source.bootstrap},
        "target": {"alias": "tgt", "bootstrap_servers": target.bootstrap},
        "topics": {"include": [TOPIC]},
        "groups": {"include": ["bench-.*"]},
    })


class LiveProducer(threading.Thread):
    """Writes `rate` records/s of unique values to `topic` until `halt` is set."""

    def __init__(self, cluster: KafkaCluster, rate: int, topic: str = TOPIC) -> None:
        super().__init__(daemon=True)
        self.cluster, self.rate, self.topic, self.halt = cluster, rate, topic, threading.Event()

    def run(self) -> None:
        producer = Producer({**self.cluster.client_config(), "linger.ms": 5})
        i = 0
        while not self.halt.is_set():
            for _ in range(self.rate // 10):
                producer.produce(self.topic, b"payment-%d" % i, b"k%d" % (i % 1000), i % PARTITIONS,
                                 headers=[("seq", b"%d" % i)])
                i += 1
            producer.poll(0)
            time.sleep(0.1)
        producer.flush(30)


def read_as_group(cluster: KafkaCluster, group: str, limit: int | None,
                  topic: str = TOPIC) -> tuple[dict[int, list[bytes]], float]:
    """Read as `group` (up to `limit` records, or to the end); commit; leave. Returns values and the leave time.

    A partition the group has no offset for starts at its beginning (auto.offset.reset=earliest).
    """
    consumer = Consumer({**cluster.client_config(), "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "enable.partition.eof": True})
    consumer.subscribe([topic])
    read: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    at_end: set[int] = set()
    while (limit is None and len(at_end) < PARTITIONS) or (limit is not None and sum(map(len, read.values())) < limit):
        for message in consumer.consume(100, timeout=0.5):
            if message.error() is not None:
                if message.error().code() == KafkaError._PARTITION_EOF:
                    at_end.add(message.partition())
                continue
            at_end.discard(message.partition())
            read[message.partition()].append(message.value())
    consumer.commit(asynchronous=False)
    consumer.close()
    return read, time.monotonic()


def count_overlap(on_source: dict[int, list[bytes]], on_target: dict[int, list[bytes]],
                  truth: dict[int, list[bytes]]) -> tuple[int, int]:
    """(records the group read on both clusters, records of the source it read on neither)."""
    reread = skipped = 0
    for p in range(PARTITIONS):
        seen = on_source[p] + on_target[p]  # every value is unique, so a repeat is a re-read
        reread += len(seen) - len(set(seen))
        skipped += len(set(truth[p]) - set(seen))
    return reread, skipped


def read_truth(cluster: KafkaCluster, topic: str = TOPIC) -> dict[int, list[bytes]]:
    """Every value of the topic, per partition, read to the end by a group of its own."""
    values, _ = read_as_group(cluster, f"truth-{time.monotonic_ns()}", None, topic)
    return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, default=4, help="groups per way of switching")
    parser.add_argument("--records", type=int, default=20_000, help="records in the topic before groups start")
    parser.add_argument("--rate", type=int, default=2_000, help="records/s written while groups switch")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    ways = ("on-demand switch", "checkpoints (default interval)")
    results: dict[str, list[tuple[float, float, int, int]]] = {way: [] for way in ways}
    with tempfile.TemporaryDirectory(prefix="bench-") as workdir:
        source, target = start_pair(Path(workdir))
        try:
            source_admin = AdminClient(source.client_config())
            source_admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result()
            time.sleep(1)
            seed = Producer(source.client_config())
            for i in range(args.records):
                seed.produce(TOPIC, b"history-%d" % i, b"k%d" % (i % 1000), i % PARTITIONS)
                if i % 10_000 == 0:
                    seed.poll(0)
            seed.flush(60)
            plan = _plan(source, target)
            engine = Replicator(plan, source.client_config(), target.client_config())
            engine_thread = threading.Thread(target=engine.run, daemon=True)
            engine_thread.start()
            live = LiveProducer(source, args.rate)
            live.start()
            checkpointer = Checkpointer(plan, source.client_config(), target.client_config())
            checkpoints = threading.Thread(target=checkpointer.run, daemon=True)
            checkpoints.start()
            switcher = GroupSwitcher(plan, source.client_config(), target.client_config())
            runs = []
            for way in results:
                for g in range(args.groups):
                    group = f"bench-{'switch' if way.startswith('on') else 'ckpt'}-{g}"
                    # Groups stop at different depths: some near the start, far behind the live end.
                    on_source, left_at = read_as_group(source, group, limit=(g + 1) * args.records // (args.groups + 1))
                    if way.startswith("on"):
                        report = switcher.switch(group, timeout_s=300)
                        assert report.ok, report.render()
                        took = time.monotonic() - left_at
                        committed = took - (report.switch_s - report.committed_s)
                    else:
                        final = committed_offsets(source_admin, group)
                        target_admin = AdminClient(target.client_config())
                        with FlowMapping(plan, target.client_config()) as mapping:
                            while True:
                                mapping.refresh()
                                wanted = {(TOPIC, p): mapping.translate(TOPIC, p, o) for (_, p), o in final.items()}
                                if None not in wanted.values() and committed_offsets(target_admin, group) == wanted:
                                    break
                                time.sleep(0.1)
                        took = committed = time.monotonic() - left_at
                    runs.append((way, group, on_source, committed, took))
            live.halt.set()
            live.join(30)
            checkpointer.stop()
            while not engine.caught_up():
                time.sleep(0.5)
            truth = read_truth(source)
            for way, group, on_source, committed, took in runs:
                on_target, _ = read_as_group(target, group, None)
                reread, skipped = count_overlap(on_source, on_target, truth)
                results[way].append((committed, took, reread, skipped))
            engine.stop()
            engine_thread.join(60)
        finally:
            source.stop()
            target.stop()
    print(f"\n{'way':<32} {'groups':>6} {'committed s':>12} {'verified s':>11} {'max s':>6} {'re-read':>8} "
          f"{'skipped':>8}")
    for way, rows in results.items():
        print(f"{way:<32} {len(rows):>6} {statistics.median(r[0] for r in rows):12.2f} "
              f"{statistics.median(r[1] for r in rows):11.2f} {max(r[1] for r in rows):6.2f} "
              f"{sum(r[2] for r in rows):>8} {sum(r[3] for r in rows):>8}")
    print("(medians; times from the group leaving the source; checkpoints commit and are checked in one step)")
    print("MirrorMaker 2 defaults for comparison: checkpoints and group offset sync every 60 s "
          "(emit.checkpoints.interval.seconds, sync.group.offsets.interval.seconds), translation behind by up "
          "to offset.lag.max = 100 records per partition.")


if __name__ == "__main__":
    main()
