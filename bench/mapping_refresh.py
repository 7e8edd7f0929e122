"""A checkpoint round's refresh of the flow's mapping after the copy stored progress a while, code trees side by side.

The copy stores one progress record per moving partition every progress interval; a checkpoint round (every
`cutover.checkpoint_interval_s`, 10 s) refreshes the mapping with all of them. This writes `--intervals` rounds of
progress for `--partitions` partitions (as the engine writes them, one offset-sync per partition too) into a fresh
flow's topics on the target (`--bootstrap`; the plan's source, `--source`, is never contacted). Then, in a child
process per code tree (its tree first on the path), it opens a `FlowMapping`, reads what was there before, and
times one `refresh()` over those intervals: wall and CPU seconds, the records read, the partitions whose copied
position it found, and the resident set before it (the records written meanwhile are fetched ahead by the client
as they arrive, up to its prefetch bounds) and at its peak (sampled every 10 ms). The trees alternate which goes
first.

    git archive HEAD~1 mirror_engine | tar -x -C /tmp/before
    .venv/bin/python bench/mapping_refresh.py --source 127.0.0.1:9092 --bootstrap 127.0.0.1:9093 \
        --code before=/tmp/before,after=.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from confluent_kafka import Producer


def _plan(source: str, target: str, name: str) -> dict:
    return {"name": name, "source": {"alias": "src", "bootstrap_servers": source},
            "target": {"alias": "tgt", "bootstrap_servers": target}, "topics": {"include": ["orders-.*"]}}


def _write(bootstrap: str, plan_data: dict, partitions: int, intervals: int, first_position: int) -> int:
    from mirror_engine.flow import InternalTopics, PartitionProgress, ensure_internal_topics
    from mirror_engine.kafka import admin_client
    from mirror_engine.mm2 import OffsetSync
    from mirror_engine.plan import plan_from_dict

    plan = plan_from_dict(plan_data)
    topics = InternalTopics.for_plan(plan)
    config = {"bootstrap.servers": bootstrap}
    ensure_internal_topics(admin_client(config), topics)
    producer = Producer({**config, "linger.ms": 20, "batch.size": 1_000_000, "compression.type": "lz4",
                         "enable.idempotence": True})
    written = 0
    for interval in range(intervals):
        for i in range(partitions):
            topic, partition = f"orders-{i // 10:05d}", i % 10
            position = first_position + 100 * interval
            if interval == 0 and first_position == 0:
                sync = OffsetSync(topic, partition, 0, 0)
                producer.produce(topics.offset_syncs, sync.record_value(), sync.record_key(), 0)
            progress = PartitionProgress(topic, partition, position + 100, position + 100, "AAAAAAAAAAAAAAAAAAAAAA")
            while True:
                try:
                    producer.produce(topics.progress, progress.value(), progress.key(plan.source.alias), 0)
                    written += 1
                    break
                except BufferError:
                    producer.poll(0.05)
        producer.poll(0)
    assert producer.flush(120) == 0
    return written


def _refresh(plan_file: str) -> None:
    """In the child: read what is there, then time the refresh over what `_write` adds meanwhile (stdin's go)."""
    import resource

    from mirror_engine.flow import FlowMapping
    from mirror_engine.plan import plan_from_dict

    plan = plan_from_dict(json.loads(Path(plan_file).read_text()))
    with FlowMapping(plan, {"bootstrap.servers": plan.target.bootstrap_servers}) as mapping:
        mapping.refresh(120)
        print("ready", flush=True)
        sys.stdin.readline()
        rss_before = _rss_mib()
        wall, cpu = time.monotonic(), resource.getrusage(resource.RUSAGE_SELF)
        batches = mapping._reader.new_batches  # count the records the refresh reads
        counted: list[int] = []

        def counting(timeout_s: float = 30.0) -> Iterator[list]:
            for batch in batches(timeout_s):
                counted.append(len(batch))
                yield batch

        mapping._reader.new_batches = counting  # type: ignore[method-assign]
        peak = _RssPeak()
        mapping.refresh(120)
        peak.stop()
        after = resource.getrusage(resource.RUSAGE_SELF)
        print(json.dumps({"seconds": time.monotonic() - wall,
                          "cpu": after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime,
                          "records": sum(counted), "positions": len(mapping.progress),
                          "rss_before_mib": rss_before, "rss_peak_mib": peak.most}), flush=True)


def _rss_mib() -> float:
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class _RssPeak:
    """The largest resident set sampled every 10 ms on a thread of its own, until `stop()`."""

    def __init__(self) -> None:
        self.most = _rss_mib()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._done.wait(0.01):
            self.most = max(self.most, _rss_mib())

    def stop(self) -> None:
        self._done.set()
        self._thread.join()
        self.most = max(self.most, _rss_mib())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True, help="the target cluster, where the flow's topics are")
    parser.add_argument("--source", default="127.0.0.1:9", help="the plan's source (never contacted)")
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--intervals", type=int, default=10, help="progress intervals between two rounds")
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--code", default="this=.", help="NAME=DIR,...: code trees (folders holding mirror_engine)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _refresh(args.child)
        return
    trees = [(name, Path(folder).resolve()) for name, folder in (item.split("=", 1) for item in args.code.split(","))]
    rows: list[tuple[str, dict]] = []
    for sample in range(args.samples):
        order = trees if sample % 2 == 0 else trees[::-1]
        for name, tree in order:
            plan_data = _plan(args.source, args.bootstrap, f"refresh{uuid.uuid4().hex[:8]}")
            _write(args.bootstrap, plan_data, args.partitions, 1, 0)
            plan_file = Path(f"/tmp/mapping-refresh-{plan_data['name']}.json")
            plan_file.write_text(json.dumps(plan_data))
            env = {**os.environ, "PYTHONPATH": f"{tree}{os.pathsep}{Path(__file__).resolve().parent.parent}"}
            child = subprocess.Popen([sys.executable, __file__, "--bootstrap", args.bootstrap, "--child",
                                      str(plan_file)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=env, stderr=subprocess.DEVNULL)
            assert child.stdout is not None and child.stdin is not None
            assert child.stdout.readline().strip() == "ready"
            _write(args.bootstrap, plan_data, args.partitions, args.intervals, 100)
            child.stdin.write("go\n")
            child.stdin.flush()
            figures = json.loads(child.stdout.readline())
            child.wait(60)
            plan_file.unlink()
            rows.append((name, figures))
            print(f"sample {sample + 1} {name}: {figures}", flush=True)
    print(f"\nrefresh after {args.intervals} progress intervals of {args.partitions:,} partitions "
          f"(load average {os.getloadavg()[0]:.1f} at the end)")
    print("| code | records read | seconds (median) | CPU s (median) | positions found "
          "| RSS before / peak, MiB (median) |")
    print("|---|---|---|---|---|---|")
    for name, _ in trees:
        mine = [figures for row_name, figures in rows if row_name == name]

        def median(key: str, mine: list[dict] = mine) -> float:
            return sorted(figures[key] for figures in mine)[len(mine) // 2]
        print(f"| {name} | {mine[0]['records']:,} | {median('seconds'):.2f} | {median('cpu'):.2f} | "
              f"{mine[0]['positions']:,} | {median('rss_before_mib'):.0f} / {median('rss_peak_mib'):.0f} |")


if __name__ == "__main__":
    main()
