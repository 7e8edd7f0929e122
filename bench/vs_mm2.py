"""The engine beside MirrorMaker 2 on the same machine, the same clusters and the same data, in one run.

Three parts (`--part`, default all):
- copy: 8 topics x 8 partitions (1,000,000 records of 100 B and 200,000 of 1 KiB, keys and headers) copied by
  MM2 (dedicated mode, Kafka 4.3.1) and by the engine (`mirror-engine run`), each into fresh target topics,
  as child processes whose CPU time (wait4) and peak RSS (VmHWM) the kernel reports; beside them the raw
  limit: a plain producer writing the same records from memory into the target. Same client settings where both
  have them: acks=all, lz4, linger 20 ms, 1 MiB batches, 8 MiB per-partition fetches.
- switch: consumer groups stop on the source at known positions (some far behind the live end, producers
  writing on), MM2 (sync.group.offsets) and the engine's checkpoints (`mirror-engine checkpoint`) translate
  them onto the target; each group then reads on the target from each translation: records read twice,
  records skipped, groups left untranslated, and when each translation reached its final value.
- fidelity: topic configs, partition counts, replication factors and ACLs on a secured target after MM2,
  and after `mirror-engine prepare`, beside the source's.

    .venv/bin/python bench/vs_mm2.py                     # everything at full size
    .venv/bin/python bench/vs_mm2.py --part copy --scale 0.1
    .venv/bin/python bench/vs_mm2.py --scale 0.005 --mm2-interval 2 --window 15   # a quick look
"""

from __future__ import annotations

import argparse
import logging
import resource
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine_vs_raw import make_records, produce_topics
from harness import (
    ENGINE_SETTINGS,
    MM2_CONSUMER,
    MM2_PRODUCER,
    PARTITIONS,
    EngineProcess,
    create_topics,
    print_table,
    stop_clusters,
    write_plan,
)

from kafka_local.cluster import KafkaCluster, start_pair
from kafka_local.mm2 import (
    MirrorMakerSettings,
    ProcessUsage,
    start_mirror_maker,
    wait_for_records,
)

TOPICS = 8  # the first half of small records, the second half of 1 KiB ones

log = logging.getLogger("vs_mm2")


# ------------------------------------------------------------------ copy
@dataclass
class CopyRun:
    name: str
    seconds: float
    first_record_s: float | None
    records: int
    megabytes: float
    usage: ProcessUsage | None  # None: measured in this process (raw produce), so no RSS of its own

    def row(self, mm2_rate: float) -> list[str]:
        rate = self.records / self.seconds
        cpu = self.usage.cpu_s if self.usage else float("nan")
        rss = f"{self.usage.max_rss_bytes / 2**20:,.0f}" if self.usage and self.usage.max_rss_bytes else "-"
        return [self.name, f"{self.seconds:.1f}", "-" if self.first_record_s is None else f"{self.first_record_s:.1f}",
                f"{rate:,.0f}", f"{self.megabytes / self.seconds:.1f}", f"{cpu:.1f}",
                f"{cpu / (self.megabytes / 1000):.0f}", rss, f"{rate / mm2_rate:.2f}"]


def _copied(target: KafkaCluster, topics: list[str], records: int, started_at: float, check_alive: Any,
            timeout_s: float) -> tuple[float, float]:
    """(seconds to the first record on the target, seconds until all are there), both since launch."""
    first = wait_for_records(target, topics, 1, timeout_s, alive=check_alive) - started_at
    done = wait_for_records(target, topics, records, timeout_s, alive=check_alive) - started_at
    return first, done


def run_copy(args: argparse.Namespace, workdir: Path, source: KafkaCluster, target: KafkaCluster) -> None:
    small, large = int(1_000_000 * args.scale) // (TOPICS // 2), int(200_000 * args.scale) // (TOPICS // 2)
    sizes = [(small, 100)] * (TOPICS // 2) + [(large, 1024)] * (TOPICS // 2)
    data = [make_records(count, size) for count, size in sizes]
    records = sum(len(rows) for rows in data)
    megabytes = sum(len(k) + len(v) for rows in data for k, v, _ in rows) / 1e6
    runs: list[CopyRun] = []
    mm2_topics, engine_topics, raw_topics = ([f"copy-{who}-{i}" for i in range(TOPICS)]
                                             for who in ("mm2", "engine", "raw"))
    log.info("copy: loading %d records into the source, twice", records)
    create_topics(source, mm2_topics + engine_topics)
    create_topics(target, raw_topics)
    produce_topics(source, dict(zip(mm2_topics, data, strict=True)))
    produce_topics(source, dict(zip(engine_topics, data, strict=True)))

    log.info("copy: raw produce into the target")
    before = resource.getrusage(resource.RUSAGE_SELF)
    raw_seconds = produce_topics(target, dict(zip(raw_topics, data, strict=True)))
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    runs.append(CopyRun("raw produce (limit)", raw_seconds, None, records, megabytes, ProcessUsage(cpu, 0, 0)))

    log.info("copy: MirrorMaker 2")
    mm2 = start_mirror_maker(source, target, workdir / "copy-mm2", MirrorMakerSettings(
        topics="copy-mm2-.*", groups="copy-.*", tasks_max=args.mm2_tasks, producer=MM2_PRODUCER,
        consumer=MM2_CONSUMER), wait=False)
    try:
        first, done = _copied(target, mm2_topics, records, mm2.started_at, mm2.check_alive, args.timeout)
    finally:
        usage = mm2.stop()
    runs.append(CopyRun(f"MirrorMaker 2 ({args.mm2_tasks} task{'s' if args.mm2_tasks > 1 else ''})", done, first,
                        records, megabytes, usage))

    log.info("copy: the engine")
    plan = write_plan(workdir / "copy-plan.yaml", source, target, name="vs-mm2-copy",
                      topics={"include": ["copy-engine-.*"]}, engine=ENGINE_SETTINGS)
    engine = EngineProcess("run", plan, workdir / "copy-engine.log")
    try:
        first, done = _copied(target, engine_topics, records, engine.started_at, engine.check_alive, args.timeout)
    finally:
        usage = engine.stop()
    runs.append(CopyRun("engine", done, first, records, megabytes, usage))
    mm2_rate = runs[1].records / runs[1].seconds
    print_table(
        f"copy: {TOPICS} topics x {PARTITIONS} partitions, {small * TOPICS // 2:,} x 100 B + {large * TOPICS // 2:,} "
        f"x 1 KiB ({megabytes:,.0f} MB of keys and values)",
        ["contender", "seconds", "first rec s", "records/s", "MB/s", "CPU s", "CPU s/GB", "peak RSS MiB",
         "rate vs MM2"],
        [run.row(mm2_rate) for run in runs],
        ["seconds: from launching the process to the last record on the target (start-up included); first rec s: "
         "to the first one",
         "CPU s and peak RSS: the process's own, from wait4 and VmHWM (start-up and shutdown included); raw "
         "produce: this benchmark's process around the produce calls, so no RSS of its own",
         f"MM2: dedicated mode, Kafka 4.3.1, -Xmx2g as its start script, tasks.max={args.mm2_tasks}, MM2's default "
         "intervals; the engine: one `mirror-engine run` process"])


# ------------------------------------------------------------------ main
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=["all", "copy", "switch", "fidelity"], default="all")
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of the copy data set and switch history")
    parser.add_argument("--mm2-tasks", type=int, default=1, help="MM2 tasks.max (its default: 1)")
    parser.add_argument("--groups", type=int, default=4, help="switch: consumer groups")
    parser.add_argument("--rate", type=int, default=2_000, help="switch: records/s written while groups switch")
    parser.add_argument("--mm2-interval", type=int, default=60,
                        help="switch: MM2 emit.checkpoints and sync.group.offsets intervals, s (MM2's default: 60)")
    parser.add_argument("--engine-interval", type=float, default=10.0,
                        help="switch: the engine's cutover.checkpoint_interval_s (the project's default: 10)")
    parser.add_argument("--window", type=float, default=180.0,
                        help="switch: seconds to watch the target groups after the last one left the source")
    parser.add_argument("--details", action="store_true", help="switch: print every partition's translations")
    parser.add_argument("--timeout", type=float, default=1800.0, help="copy: seconds allowed per contender")
    parser.add_argument("-v", "--verbose", action="store_true", help="log each phase")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (logs of MM2 and the engine)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    log.setLevel(logging.INFO if args.verbose else logging.WARNING)
    workdir = Path(tempfile.mkdtemp(prefix="vs-mm2-"))
    try:
        if args.part in ("all", "copy", "switch"):
            # One plain pair for both parts: they use topics, groups and MM2 aliases of their own.
            source, target = start_pair(workdir / "clusters")
            try:
                if args.part in ("all", "copy"):
                    run_copy(args, workdir, source, target)
                if args.part in ("all", "switch"):
                    from vs_mm2_switch import run_switch

                    run_switch(args, workdir, source, target)
            finally:
                stop_clusters([source, target])
        if args.part in ("all", "fidelity"):
            from vs_mm2_fidelity import run_fidelity

            run_fidelity(args, workdir)
    finally:
        if args.keep:
            print(f"\nwork folder kept: {workdir}")
        else:
            subprocess.run(["rm", "-rf", str(workdir)], check=False)


if __name__ == "__main__":
    main()
