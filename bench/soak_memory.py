"""The engine's memory while it copies a large backlog: RSS against records copied, peak, idle, copy rate.

For each case (default: 20,000,000 records of 100 B, then 2,000,000 of 1 KiB; keys and a header each, 8
partitions) the script loads the backlog into a fresh source topic. Then, round by round (`--rounds`), it
measures the raw produce rate into the target (a plain producer writing up to `--raw-records` records from memory,
with the engine's producer settings) and runs each engine contender as its own `mirror-engine run` process,
copying the backlog into fresh target topics until the target holds every record, then idle for `--idle`
seconds. Every second (`--sample-every`) it reads the engine's `VmRSS` from /proc and counts the records on the
target.

Per contender it prints the RSS curve against records copied, then a table with one row per run:
- `seconds`, `records/s`: from launching the process until the target holds every record (start-up included);
  `vs raw`: records/s over the raw produce rate of the same round (the ratio to compare across runs);
- `RSS@10%`, `RSS@50%`: the largest RSS sampled until 10% (50%) of the backlog was copied: beside `peak`
  they show whether memory levels off or grows with the records copied;
- `peak`: the process's `VmHWM` (its largest resident set, read until it exits);
- `idle`: the RSS after `--idle` seconds with nothing left to copy;
and with several rounds, each contender's median rates and largest RSS figures.

Contenders (`--engine`, repeatable; default one: this checkout as it is):
    LABEL[=CHECKOUT][,KIND.KEY=VALUE ...][,trim=S][,heap=S]
CHECKOUT is a checkout whose `mirror_engine` runs (`PYTHONPATH`; e.g. a worktree with other settings). Kinds:
`engine.*` sets the plan's engine section (e.g. `engine.batch_size=1000`); `env.*` the process's environment
(e.g. `env.MALLOC_ARENA_MAX=2`); `consumer.*` / `producer.*` override librdkafka settings of every client the
engine makes, `mallopt.*` glibc's malloc parameters at start (`mallopt.mmap_threshold=262144`), `trim=S` calls
`malloc_trim(0)` every S seconds and `heap=S` logs the heap's use every S seconds (summarized after the run), all
through `bench/engine_with_settings.py`, the engine's code unchanged.

    .venv/bin/python bench/soak_memory.py                   # 20,000,000 x 100 B and 2,000,000 x 1 KiB
    .venv/bin/python bench/soak_memory.py --scale 0.05      # a twentieth of each backlog
    .venv/bin/python bench/soak_memory.py --case 2000000x100 --rounds 3 \
        --engine defaults --engine small-prefetch,consumer.queued.min.messages=10000,heap=1
    .venv/bin/python bench/soak_memory.py --engine before=/tmp/before-checkout --engine after=/tmp/after-checkout
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median

import yaml
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from engine_vs_raw import PARTITIONS, PRODUCER_SETTINGS, make_records
from harness import ENGINE_SETTINGS, cluster_section, create_topics, print_table, stop_clusters

from kafka_local.cluster import KafkaCluster, start_pair
from kafka_local.mm2 import ProcessUsage, count_records, exit_code, memory_bytes, stop_process
from mirror_engine.plan import plan_from_dict

ROOT = Path(__file__).resolve().parent.parent
POOL = 100_000  # distinct records produced over and over, so no backlog is ever held in memory whole

log = logging.getLogger("soak_memory")


@dataclass
class Contender:
    label: str
    checkout: Path
    consumer: dict[str, str] = field(default_factory=dict)
    producer: dict[str, str] = field(default_factory=dict)
    engine: dict[str, int | float | str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    mallopt: dict[str, str] = field(default_factory=dict)
    trim_every_s: float = 0.0
    heap_every_s: float = 0.0

    @classmethod
    def parse(cls, spec: str) -> Contender:
        head, *settings = spec.split(",")
        label, _, checkout = head.partition("=")
        contender = cls(label, Path(checkout).resolve() if checkout else ROOT)
        for setting in settings:
            key, sep, value = setting.partition("=")
            kind, dot, name = key.partition(".")
            if not sep or (kind not in ("trim", "heap") and not dot):
                raise SystemExit(f"--engine {spec}: expected KIND.KEY=VALUE or trim=S, got {setting!r}")
            if kind in ("consumer", "producer", "env", "mallopt"):
                getattr(contender, kind)[name] = value
            elif kind == "engine":
                contender.engine[name] = int(value) if value.isdigit() else value
            elif kind == "trim":
                contender.trim_every_s = float(value)
            elif kind == "heap":
                contender.heap_every_s = float(value)
            else:
                raise SystemExit(f"--engine {spec}: unknown kind {kind!r} "
                                 "(consumer, producer, engine, env, mallopt, trim, heap)")
        return contender

    def command(self, plan_file: Path) -> list[str]:
        engine_args = ["run", "--plan", str(plan_file), "--status-port", "-1"]
        if not (self.consumer or self.producer or self.mallopt or self.trim_every_s or self.heap_every_s):
            return [sys.executable, "-m", "mirror_engine.cli", *engine_args]
        launcher = [sys.executable, str(ROOT / "bench" / "engine_with_settings.py")]
        launcher += [f"--consumer={k}={v}" for k, v in self.consumer.items()]
        launcher += [f"--producer={k}={v}" for k, v in self.producer.items()]
        launcher += [f"--mallopt={k}={v}" for k, v in self.mallopt.items()]
        if self.trim_every_s:
            launcher.append(f"--trim-every={self.trim_every_s}")
        if self.heap_every_s:
            launcher.append(f"--heap-every={self.heap_every_s}")
        return [*launcher, "--", *engine_args]


@dataclass
class Sample:
    seconds: float
    copied: int
    rss_bytes: int


@dataclass
class SoakRun:
    label: str
    records: int
    seconds: float
    samples: list[Sample]
    idle_rss_bytes: int
    usage: ProcessUsage

    def rss_until(self, fraction: float) -> int:
        """The largest RSS sampled until `fraction` of the backlog was on the target."""
        return max((s.rss_bytes for s in self.samples if s.copied <= fraction * self.records), default=0)


def produce_stream(cluster: KafkaCluster, topic: str, count: int, pool: list[tuple[bytes, bytes, list]]) -> float:
    """Produce `count` records (the pool's, over and over; partition = index mod 8); seconds to the last ack."""
    producer = Producer({**cluster.client_config(), **PRODUCER_SETTINGS})
    size = len(pool)
    produce, poll = producer.produce, producer.poll
    started = time.perf_counter()
    for i in range(count):
        key, value, headers = pool[i % size]
        while True:
            try:
                produce(topic, value, key, i % PARTITIONS, headers=headers)
                break
            except BufferError:
                poll(0.05)
    if producer.flush(1800):
        raise RuntimeError(f"{cluster.name}: records were not acknowledged within 1800 s")
    return time.perf_counter() - started


def soak(contender: Contender, index: int, case: str, records: int, source: KafkaCluster, target: KafkaCluster,
         workdir: Path, args: argparse.Namespace) -> SoakRun:
    alias = f"c{index}{case}"  # a fresh alias: fresh target topics (`<alias>.<topic>`) and internal topics
    plan = {"name": f"soak-{alias}", "source": cluster_section(alias, source),
            "target": cluster_section("target", target), "topics": {"include": [f"soak-{case}"]},
            "replication_policy": {"type": "default"}, "sync": {"acls": False},
            "engine": {**ENGINE_SETTINGS, "status_port": -1, **contender.engine}}
    plan_from_dict(plan)  # refused here rather than in the child
    plan_file = workdir / f"{alias}.yaml"
    plan_file.write_text(yaml.safe_dump(plan, sort_keys=False))
    targets = [f"{alias}.soak-{case}"]
    env = {**os.environ, "PYTHONPATH": str(contender.checkout), **contender.env}
    log_file = workdir / f"{alias}.log"
    with open(log_file, "wb") as out:
        process = subprocess.Popen(contender.command(plan_file), stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, cwd=contender.checkout, env=env, start_new_session=True)
    started = time.monotonic()
    admin = AdminClient({**target.client_config(), "log_level": 0})
    samples: list[Sample] = []
    done_at = idle_rss = 0
    print(f"\n{contender.label} ({case}, {records:,} records; checkout {contender.checkout}):")
    print(f"  {'s':>6} {'copied':>12} {'records/s':>10} {'RSS MiB':>8}")
    try:
        while True:
            tick = time.monotonic()
            if exit_code(process) is not None:
                tail = "\n".join(log_file.read_text(errors="replace").splitlines()[-30:])
                raise RuntimeError(f"{contender.label}: the engine exited with {process.returncode}:\n{tail}")
            try:
                copied = count_records(admin, targets)
            except Exception as error:  # the target topic being created: no leader yet
                log.debug("counting: %s", error)
                copied = samples[-1].copied if samples else 0
            sample = Sample(tick - started, copied, memory_bytes(process.pid, "VmRSS"))
            samples.append(sample)
            previous = samples[-6] if len(samples) > 5 else samples[0]
            rate = (copied - previous.copied) / max(sample.seconds - previous.seconds, 1e-9)
            finished = copied >= records and not done_at
            if len(samples) % args.print_every == 0 or finished:
                print(f"  {sample.seconds:6.0f} {copied:12,} {rate:10,.0f} {sample.rss_bytes / 2**20:8.0f}"
                      + ("  <- caught up" if finished else ""), flush=True)
            if finished:
                done_at = tick
            if done_at and tick - done_at >= args.idle:
                idle_rss = sample.rss_bytes
                print(f"  {sample.seconds:6.0f} {copied:12,} {'idle':>10} {idle_rss / 2**20:8.0f}")
                break
            if tick - started > args.timeout:
                raise TimeoutError(f"{contender.label}: {copied:,} of {records:,} records after {args.timeout:.0f} s")
            time.sleep(max(0.0, args.sample_every - (time.monotonic() - tick)))
    finally:
        usage = stop_process(process, timeout_s=90)
    if contender.heap_every_s:
        print_heap_summary(log_file)
    admin.delete_topics(targets)  # the next contender's copy needs the disk space more
    return SoakRun(contender.label, records, done_at - started, samples, idle_rss, usage)


def print_heap_summary(log_file: Path) -> None:
    """The largest heap figures the engine printed (`heap=S`): what librdkafka and Python really held, and what
    the heap kept free (counted in the RSS until given back)."""
    figures = [[float(word) for word in line.replace(",", "").split() if word.replace(".", "").isdigit()][:3]
               for line in log_file.read_text(errors="replace").splitlines() if line.startswith("heap: in use")]
    if figures:
        in_use, free, mapped = (max(f[i] for f in figures) for i in range(3))
        print(f"  heap (glibc mallinfo2, sampled): in use at most {in_use:.0f} MiB, free but kept at most {free:.0f} "
              f"MiB, mmapped at most {mapped:.0f} MiB")


def parse_case(text: str) -> tuple[int, int]:
    count, _, size = text.lower().partition("x")
    return int(count.replace("_", "").replace(",", "")), int(size)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--case", action="append", metavar="RECORDSxBYTES",
                        help="a backlog, e.g. 20000000x100 (repeatable; default 20000000x100 and 2000000x1024)")
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of each backlog")
    parser.add_argument("--engine", action="append", metavar="SPEC", help="a contender (see above; repeatable)")
    parser.add_argument("--rounds", type=int, default=1, help="runs of each contender per case, alternating")
    parser.add_argument("--raw-records", type=int, default=5_000_000,
                        help="records of each round's raw produce (at most the backlog)")
    parser.add_argument("--idle", type=float, default=10.0, help="seconds idle after catching up")
    parser.add_argument("--sample-every", type=float, default=1.0,
                        help="seconds between samples (also the precision of each run's seconds)")
    parser.add_argument("--print-every", type=int, default=5, help="print every Nth sample of the RSS curve")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds allowed per contender and case")
    parser.add_argument("-v", "--verbose", action="store_true", help="log each phase")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (engine logs, plans)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    log.setLevel(logging.INFO if args.verbose else logging.WARNING)
    cases = [parse_case(c) for c in (args.case or ["20000000x100", "2000000x1024"])]
    contenders = [Contender.parse(spec) for spec in (args.engine or ["engine"])]
    workdir = Path(tempfile.mkdtemp(prefix="soak-memory-"))
    results: list[tuple[str, SoakRun, float]] = []
    try:
        source, target = start_pair(workdir / "clusters")
        try:
            for count, size in cases:
                records = max(PARTITIONS, int(count * args.scale))
                case = f"{size}b"
                pool = make_records(min(records, POOL), size)
                megabytes = records * sum(len(k) + len(v) for k, v, _ in pool) / len(pool) / 1e6
                create_topics(source, [f"soak-{case}"])
                log.info("loading %d records of %d B into the source", records, size)
                load_seconds = produce_stream(source, f"soak-{case}", records, pool)
                print(f"\n{records:,} x {size} B ({megabytes:,.0f} MB of keys and values): loaded into the source "
                      f"in {load_seconds:.0f} s")
                # Each round measures the raw rate again, then runs every contender: load from elsewhere falls on
                # the contenders of a round alike, and each ratio is taken against the raw rate of its own round.
                for round_ in range(args.rounds):
                    raw_records = min(records, args.raw_records)
                    raw_topic = f"raw-{case}-{round_}"
                    create_topics(target, [raw_topic])
                    raw_rate = raw_records / produce_stream(target, raw_topic, raw_records, pool)
                    AdminClient(target.client_config()).delete_topics([raw_topic])
                    print(f"\nround {round_ + 1}: raw produce of {raw_records:,} records into the target: "
                          f"{raw_rate:,.0f} records/s")
                    for index, contender in enumerate(contenders):
                        run = soak(contender, round_ * len(contenders) + index, case, records, source, target,
                                   workdir, args)
                        results.append((f"{records:,} x {size} B", run, raw_rate))
                del pool
        finally:
            stop_clusters([source, target])
    finally:
        if args.keep:
            print(f"\nwork folder kept: {workdir}")
        else:
            subprocess.run(["rm", "-rf", str(workdir)], check=False)
    mib = 2**20
    rows = [[backlog, run.label, f"{run.seconds:.1f}", f"{run.records / run.seconds:,.0f}", f"{raw_rate:,.0f}",
             f"{run.records / run.seconds / raw_rate:.2f}", f"{run.rss_until(0.1) / mib:,.0f}",
             f"{run.rss_until(0.5) / mib:,.0f}", f"{run.usage.max_rss_bytes / mib:,.0f}",
             f"{run.idle_rss_bytes / mib:,.0f}", f"{run.usage.cpu_s:.0f}"] for backlog, run, raw_rate in results]
    print_table(
        "engine memory while copying a backlog (RSS in MiB), every run",
        ["backlog", "engine", "seconds", "records/s", "raw rec/s", "vs raw", "RSS@10%", "RSS@50%", "peak",
         "idle", "CPU s"], rows,
        ["seconds, records/s: from launching `mirror-engine run` to the last record on the target (start-up "
         "included); raw rec/s: a plain producer into the target, same round and settings; vs raw: their ratio",
         "RSS@10%/@50%: the largest RSS sampled until that share was copied; peak: VmHWM; idle: RSS after "
         f"{args.idle:.0f} s with nothing to copy; CPU s: the engine's user + system time"])
    if args.rounds > 1:
        summary = []
        for backlog in dict.fromkeys(backlog for backlog, _, _ in results):
            for contender in contenders:
                mine = [(run, raw) for b, run, raw in results if b == backlog and run.label == contender.label]
                summary.append([
                    backlog, contender.label, f"{median(r.records / r.seconds for r, _ in mine):,.0f}",
                    f"{median(raw for _, raw in mine):,.0f}",
                    f"{median(r.records / r.seconds / raw for r, raw in mine):.2f}",
                    f"{max(r.rss_until(0.1) for r, _ in mine) / mib:,.0f}",
                    f"{max(r.usage.max_rss_bytes for r, _ in mine) / mib:,.0f}",
                    f"{max(r.idle_rss_bytes for r, _ in mine) / mib:,.0f}"])
        print_table(f"over {args.rounds} rounds: median rates, largest RSS (MiB)",
                    ["backlog", "engine", "records/s", "raw rec/s", "vs raw", "RSS@10%", "peak", "idle"], summary)

if __name__ == "__main__":
    main()
