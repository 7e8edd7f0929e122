"""A small migration as a user starts one, timed from outside: `mirror-engine run --mm2-config FILE` of a plan never
run before, its first record on the target and its copy rate beside a raw producer's, on the same clusters.

The source holds `--topics` topics of `--partitions` partitions each with `--records` records in all (keys, 100 B
values, a header), spread evenly over every partition. Each round writes the same records into fresh target topics
with a plain producer (the engine's producer
settings: acks=all, idempotence, lz4, linger 20 ms, 1 MiB batches), then launches, for every `--code`, an MM2 file
with a source alias of its own (so its remote topic, internal topics and progress are new) and polls the target's
end offsets until every record is there; then stops it with SIGTERM. The codes alternate from round to round.

Figures per code (median, min and max over the rounds):
- `first s`: launch to the first record on the target (process start included);
- `copy vs raw`: the raw producer's time in the same round over the time from the first record to the last;
- `whole vs raw`: the same over launch to the last record (start-up included).

    .venv/bin/python bench/small_migration.py                                    # 127,047 records, 13 partitions
    .venv/bin/python bench/small_migration.py --code before=/tmp/before --code main
    .venv/bin/python bench/small_migration.py --records 2000 --rounds 1          # a quick look
    .venv/bin/python bench/small_migration.py --topics 250 --partitions 8 --records 200000   # 2,000 partitions
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Producer
from harness import EndOffsets, create_topics, launch, print_table, stop
from scale_figures import Code

from kafka_local.cluster import KafkaCluster, start_pair

# The engine's producer settings (its plan defaults), so that raw and engine differ only in the copy.
RAW_PRODUCER = {"enable.idempotence": True, "acks": "all", "compression.type": "lz4", "linger.ms": 20,
                "batch.size": 1_048_576, "queue.buffering.max.messages": 500_000}
TOPIC = "orders"

log = logging.getLogger("small_migration")


def records(count: int) -> list[tuple[bytes, bytes, list[tuple[str, bytes]]]]:
    return [(b"key-%05d" % (i % 10_000), b"%08d" % i + b"v" * 92, [("seq", b"%d" % i)]) for i in range(count)]


def topic_names(prefix: str, count: int) -> list[str]:
    return [prefix] if count == 1 else [f"{prefix}-{i:04d}" for i in range(count)]


def produce(cluster: KafkaCluster, topics: list[str], data: list, partitions: int,
            settings: dict | None = None) -> float:
    """Every record into `topics` (record i into partition i mod `partitions` of topic i div `partitions` mod the
    topics); seconds from the first produce to the last acknowledgement."""
    producer = Producer({**cluster.client_config(), **(settings or {"linger.ms": 20, "acks": "all"})})
    started = time.perf_counter()
    for i, (key, value, headers) in enumerate(data):
        while True:
            try:
                producer.produce(topics[(i // partitions) % len(topics)], value, key, i % partitions,
                                 headers=headers)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 10_000 == 0:
            producer.poll(0)
    if producer.flush(120):
        raise RuntimeError(f"records for {topics[0]}... were not acknowledged within 120 s")
    return time.perf_counter() - started


def mm2_file(path: Path, alias: str, source: KafkaCluster, target: KafkaCluster, topics: list[str]) -> Path:
    path.write_text("\n".join([
        f"clusters = {alias}, tgt",
        f"{alias}.bootstrap.servers = {source.bootstrap}",
        f"tgt.bootstrap.servers = {target.bootstrap}",
        f"{alias}->tgt.enabled = true",
        f"{alias}->tgt.topics = {TOPIC if len(topics) == 1 else TOPIC + '-.*'}",
        "sync.topic.acls.enabled = false",
        *(f"{name}.replication.factor = 1" for name in
          ("checkpoints.topic", "heartbeats.topic", "offset-syncs.topic", "offset.storage", "status.storage",
           "config.storage")),
        "replication.factor = 1",
        f"tgt.producer.linger.ms = {RAW_PRODUCER['linger.ms']}",
        f"tgt.producer.batch.size = {RAW_PRODUCER['batch.size']}",
        f"tgt.producer.compression.type = {RAW_PRODUCER['compression.type']}",
        "",
    ]))
    return path


@dataclass
class Samples:
    first: list[float] = field(default_factory=list)
    copy_vs_raw: list[float] = field(default_factory=list)
    whole_vs_raw: list[float] = field(default_factory=list)


def migrate(code: Code, alias: str, workdir: Path, source: KafkaCluster, target: KafkaCluster, ends: EndOffsets,
            count: int, topics: list[str], partitions: int) -> tuple[float, float]:
    """Seconds from the launch to the first record on the target, and to the last."""
    config = mm2_file(workdir / f"{alias}.properties", alias, source, target, topics)
    command = [sys.executable, "-m", "mirror_engine.cli", "run", "--mm2-config", str(config)]
    log_file = workdir / f"{alias}.log"
    remotes = [f"{alias}.{topic}" for topic in topics]
    process, launched = launch(command, code.env(), workdir, log_file)
    first = last = None
    deadline = time.monotonic() + 600
    try:
        while last is None:
            total = ends.total_of(remotes, partitions)
            now = time.monotonic()
            if total and first is None:
                first = now
            if total >= count:
                last = now
            elif process.poll() is not None or now > deadline:
                tail = "\n".join(log_file.read_text(errors="replace").splitlines()[-20:])
                raise RuntimeError(f"{code.label}: {total} of {count} records on the target, engine "
                                   f"{'exited' if process.poll() is not None else 'still running'}:\n{tail}")
            else:
                time.sleep(0.01)
    finally:
        stop(process)
    assert first is not None
    return first - launched, last - launched


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=127_047)
    parser.add_argument("--topics", type=int, default=1)
    parser.add_argument("--partitions", type=int, default=13, help="per topic")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--code", type=Code.parse, action="append", default=[],
                        help="LABEL=FOLDER: the mirror_engine package in FOLDER (repeatable; default: this checkout)")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(message)s")
    codes: list[Code] = args.code or [Code("this checkout")]
    for code in codes:
        code.compile_bytecode()
    data = records(args.records)
    samples = {code.label: Samples() for code in codes}
    raw_rates: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench-small-") as folder:
        workdir = Path(folder)
        source, target = start_pair(workdir / "clusters")
        try:
            topics = topic_names(TOPIC, args.topics)
            create_topics(source, topics, args.partitions)
            produce(source, topics, data, args.partitions)
            ends = EndOffsets(target)
            for round_ in range(args.rounds):
                raw_topics = topic_names(f"raw-{round_}", args.topics)
                create_topics(target, raw_topics, args.partitions)
                raw = produce(target, raw_topics, data, args.partitions, RAW_PRODUCER)
                raw_rates.append(args.records / raw)
                for index, code in enumerate(codes if round_ % 2 == 0 else codes[::-1]):
                    alias = f"s{round_}x{index}"
                    first, last = migrate(code, alias, workdir, source, target, ends, args.records, topics,
                                          args.partitions)
                    figures = samples[code.label]
                    figures.first.append(first)
                    figures.copy_vs_raw.append(raw / max(last - first, 1e-3))
                    figures.whole_vs_raw.append(raw / last)
                    log.info("round %d, %s: first record %.2f s, all %d after %.2f s (raw %.2f s)", round_ + 1,
                             code.label, first, args.records, last, raw)
        finally:
            source.stop()
            target.stop()

    def spread(values: list[float]) -> list[str]:
        return [f"{statistics.median(values):.2f}", f"{min(values):.2f}", f"{max(values):.2f}"]

    print_table(
        f"a small migration from an MM2 file: {args.records:,} records, {args.topics} topic(s) x {args.partitions} "
        "partitions, "
        f"{args.rounds} round(s); raw producer {statistics.median(raw_rates):,.0f} records/s (median)",
        ["code", "first s", "min", "max", "copy vs raw", "min", "max", "whole vs raw", "min", "max"],
        [[label, *spread(s.first), *spread(s.copy_vs_raw), *spread(s.whole_vs_raw)] for label, s in samples.items()],
        notes=["first s: launch to the first record on the target; copy vs raw: the raw producer's time over the "
               "first record to the last; whole vs raw: over the launch to the last"])


if __name__ == "__main__":
    main()
