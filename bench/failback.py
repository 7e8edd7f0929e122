"""The way back after a cutover, timed: from `mirror-engine failback` to every group and producer back on the source,
and the copy back's rate beside the forward engine's, in the same run on the same clusters.

A migration first: `--topics` topics of `--partitions` partitions hold `--records` records (keys, 100 B values, a
header) on the source; `mirror-engine prepare` then `run` copy them (the forward rate: first record to last on the
target); `--groups` groups, each committed halfway through every partition, are switched, and every topic's producers.
Then `--back` records are written on the target, as producers there would, and the way back is timed:
- `prepare s`: `mirror-engine failback` (a process of its own, start included): each partition's start stored;
- `copy back s`: `mirror-engine run --failback` launched until every record written on the target is on the
  source (its rate: first record to last on the source);
- `producers s`, `groups s`: `switch_producers` and `GroupSwitcherBack.switch` of every topic and group (eight at
  a time, as a DAG's mapped tasks would);
- `total s`: the command to the last group back.

    .venv/bin/python bench/failback.py                                          # the demo's shape: 3 x 3, 2 groups
    .venv/bin/python bench/failback.py --topics 125 --partitions 8 --records 400000 --back 400000   # 1,000
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from confluent_kafka import Producer
from harness import (
    ENGINE_SETTINGS,
    ROOT,
    EndOffsets,
    EngineProcess,
    create_topics,
    print_table,
    wait_for_group_coordinator,
    write_plan,
)

from kafka_local.cluster import KafkaCluster, start_pair
from mirror_engine.cutover import GroupSwitcher, switch_producers
from mirror_engine.failback import Failback, GroupSwitcherBack
from mirror_engine.kafka import admin_client, commit_offsets
from mirror_engine.plan import MigrationPlan, load_plan

IN_PARALLEL = 8  # switches at a time, as the DAG's mapped tasks run them


def produce(cluster: KafkaCluster, topics: list[str], partitions: int, count: int, tag: bytes) -> None:
    producer = Producer({**cluster.client_config(), "linger.ms": 20, "acks": "all", "compression.type": "lz4"})
    for i in range(count):
        while True:
            try:
                producer.produce(topics[(i // partitions) % len(topics)], tag + b"%08d" % i + b"v" * 84,
                                 b"key-%05d" % (i % 10_000), i % partitions, headers=[("seq", b"%d" % i)])
                break
            except BufferError:
                producer.poll(0.05)
        if i % 10_000 == 0:
            producer.poll(0)
    if producer.flush(300):
        raise RuntimeError("records were not acknowledged within 300 s")


def copied(engine: EngineProcess, ends: EndOffsets, topics: list[str], partitions: int, before: int,
           wanted: int, timeout_s: float = 900) -> tuple[float, float]:
    """(monotonic time of the first new record, of the last) once `wanted` records are there beyond `before`."""
    first = None
    deadline = time.monotonic() + timeout_s
    while True:
        engine.check_alive()
        landed = ends.total_of(topics, partitions) - before
        now = time.monotonic()
        if landed > 0 and first is None:
            first = now
        if landed >= wanted:
            assert first is not None
            return first, now
        if now > deadline:
            raise TimeoutError(f"{landed:,} of {wanted:,} records copied after {timeout_s:.0f} s")
        time.sleep(0.02)


def in_parallel(call, items: list[str]) -> float:  # type: ignore[no-untyped-def]
    started = time.monotonic()
    with ThreadPoolExecutor(IN_PARALLEL) as pool:
        for result in pool.map(call, items):
            if hasattr(result, "ok") and not result.ok:
                raise RuntimeError(result.render())
    return time.monotonic() - started


def migrate(plan: MigrationPlan, plan_file: Path, workdir: Path, source: KafkaCluster, target: KafkaCluster,
            topics: list[str], partitions: int, records: int, groups: list[str]) -> float:
    """The way there; the forward engine's rate (records/s, first record to last on the target). The target is
    prepared first, so that the forward copy, as the copy back, writes into topics that exist."""
    sc, tc = source.client_config(), target.client_config()
    prepared = subprocess.run([sys.executable, "-m", "mirror_engine.cli", "prepare", "--plan", str(plan_file)],
                              cwd=ROOT, capture_output=True, text=True)
    if prepared.returncode:
        raise RuntimeError(prepared.stderr)
    engine = EngineProcess("run", plan_file, workdir / "forward.log")
    try:
        first, last = copied(engine, EndOffsets(target), topics, partitions, 0, records)
        switcher = GroupSwitcher(plan, sc, tc)
        in_parallel(lambda group: switcher.switch(group, timeout_s=600), groups)
        in_parallel(lambda topic: switch_producers(plan, sc, tc, topic, idle_s=0.5, timeout_s=600), topics)
    finally:
        engine.stop()
    return records / max(last - first, 1e-3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=3, help="per topic")
    parser.add_argument("--records", type=int, default=60_000, help="on the source before the cutover")
    parser.add_argument("--back", type=int, default=60_000, help="written on the target after it")
    parser.add_argument("--groups", type=int, default=2)
    args = parser.parse_args()
    topics = [f"orders-{i:04d}" for i in range(args.topics)]
    groups = [f"app-{i:03d}" for i in range(args.groups)]
    with tempfile.TemporaryDirectory(prefix="bench-failback-") as folder:
        workdir = Path(folder)
        source, target = start_pair(workdir / "clusters")
        try:
            for cluster in (source, target):
                wait_for_group_coordinator(cluster)
            create_topics(source, topics, args.partitions)
            produce(source, topics, args.partitions, args.records, b"source-")
            source_admin = admin_client(source.client_config())
            halfway = args.records // (2 * args.topics * args.partitions)
            for group in groups:
                commit_offsets(source_admin, group, {(t, p): halfway for t in topics for p in range(args.partitions)})
            plan_file = write_plan(workdir / "plan.yaml", source, target, name="bench",
                                   topics={"include": ["orders-.*"]}, engine=ENGINE_SETTINGS,
                                   cutover={"groups": groups})
            plan = load_plan(plan_file)
            forward_rate = migrate(plan, plan_file, workdir, source, target, topics, args.partitions, args.records,
                                   groups)
            produce(target, topics, args.partitions, args.back, b"target-")

            started = time.monotonic()
            prepared = subprocess.run([sys.executable, "-m", "mirror_engine.cli", "failback", "--plan",
                                       str(plan_file)], cwd=ROOT, capture_output=True, text=True)
            if prepared.returncode:
                raise RuntimeError(prepared.stderr)
            prepare_s = time.monotonic() - started
            engine = EngineProcess("run", plan_file, workdir / "back.log", "--failback")
            sc, tc = source.client_config(), target.client_config()
            try:
                first, last = copied(engine, EndOffsets(source), topics, args.partitions, args.records, args.back)
                copy_back_s = last - engine.started_at
                back_plan = Failback(plan, sc, tc).plan
                producers_s = in_parallel(lambda topic: switch_producers(back_plan, tc, sc, topic, idle_s=0.5,
                                                                         timeout_s=600), topics)
                switcher = GroupSwitcherBack(back_plan, tc, sc)
                groups_s = in_parallel(lambda group: switcher.switch(group, timeout_s=600), groups)
            finally:
                engine.stop()
            total_s = time.monotonic() - started
            back_rate = args.back / max(last - first, 1e-3)
        finally:
            source.stop()
            target.stop()

    print_table(
        f"the way back: {args.topics} topic(s) x {args.partitions} partitions, {args.records:,} records there, "
        f"{args.back:,} back, {args.groups} group(s)",
        ["prepare s", "copy back s", "producers s", "groups s", "total s", "forward rec/s", "back rec/s",
         "back vs forward"],
        [[f"{prepare_s:.1f}", f"{copy_back_s:.1f}", f"{producers_s:.1f}", f"{groups_s:.1f}", f"{total_s:.1f}",
          f"{forward_rate:,.0f}", f"{back_rate:,.0f}", f"{back_rate / forward_rate:.2f}"]],
        notes=["copy back s: `run --failback` launched to the last record on the source; rates: first record to "
               "last, the same engine settings both ways"])


if __name__ == "__main__":
    main()
