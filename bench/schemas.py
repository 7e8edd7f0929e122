"""The cost of schema-id translation, and the time to move many subjects, on real brokers and real registries.

Each round copies the same framed records (magic byte, the source registry's id, a 100 B payload) twice with
`mirror-engine run --until-caught-up`, into topics of their own: once by a plan without registries (bytes copied as
they are) and once by a plan with `schemas` in `ids: translate` (bytes 1-4 rewritten to the target's id, which
differs). The order alternates round by round. A copy's rate is its records over the time from its first record on
the target to its last; the ratio is translate over plain, per round, and its median.

Then `--subjects` subjects (one Avro version each) registered on the source registry are moved to the empty target
registry (`SchemaMover.plan` then `apply`: every version looked up, then registered), and timed; a second move, which
finds every version there, is timed too.

    .venv/bin/python bench/schemas.py                                   # 400,000 records x 8 partitions, 3 rounds
    .venv/bin/python bench/schemas.py --records 2000 --rounds 1 --subjects 10    # a smoke run
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from confluent_kafka import Producer
from harness import ENGINE_SETTINGS, EndOffsets, EngineProcess, create_topics, print_table, write_plan

from kafka_local.cluster import KafkaCluster, start_pair
from kafka_local.registry import SchemaRegistryServer, start_registry
from mirror_engine.schemas import RegistryClient, Schema, SchemaMover


def _schema(name: str) -> Schema:
    return Schema(json.dumps({"type": "record", "name": name, "fields": [{"name": "v", "type": "bytes"}]}))


def produce_framed(cluster: KafkaCluster, topic: str, partitions: int, count: int, schema_id: int) -> None:
    producer = Producer({**cluster.client_config(), "linger.ms": 20, "acks": "all", "compression.type": "lz4"})
    frame = b"\x00" + schema_id.to_bytes(4, "big")
    for i in range(count):
        while True:
            try:
                producer.produce(topic, frame + b"%08d" % i + b"v" * 92, b"key-%05d" % (i % 10_000), i % partitions)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(120) == 0


def copy_rate(plan_file: Path, log: Path, target: EndOffsets, topic: str, partitions: int, records: int) -> float:
    """Records per second from the first record on the target to the last."""
    engine = EngineProcess("run", plan_file, log, "--until-caught-up", "--max-seconds", "600")
    first = target.wait_beyond(topic, partitions, 0, lambda: engine.process.poll() is None, timeout_s=300)
    while target.total(topic, partitions) < records:
        engine.check_alive()
        time.sleep(0.005)
    last = time.monotonic()
    engine.stop()
    return records / max(last - first, 1e-6)


def move_subjects(source: SchemaRegistryServer, target: SchemaRegistryServer, count: int) -> tuple[float, float]:
    """(first move s, second move s) of `count` subjects of one version each."""
    from mirror_engine.plan import SchemasSpec

    source_client = RegistryClient({"url": source.url})
    subjects = [f"moved-{n:05d}-value" for n in range(count)]
    for n, subject in enumerate(subjects):
        source_client.register(subject, _schema(f"Moved{n}"))
    spec = SchemasSpec.model_validate({"source": {"url": source.url}, "target": {"url": target.url}})
    timings = []
    for _move in range(2):
        mover = SchemaMover(spec, RegistryClient({"url": source.url}), RegistryClient({"url": target.url}))
        started = time.monotonic()
        refused = mover.apply(mover.plan(subjects))
        timings.append(time.monotonic() - started)
        assert not refused, refused[:3]
    moved = [s for s in RegistryClient({"url": target.url}).subjects() if s.startswith("moved-")]
    assert len(moved) == count, f"{len(moved)} subjects on the target for {count}"
    return timings[0], timings[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=400_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--subjects", type=int, default=1000)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-schemas-") as scratch:
        home = Path(scratch)
        source, target = start_pair(home / "clusters")
        registries = [start_registry(home / "registry-source"), start_registry(home / "registry-target")]
        try:
            source_registry, target_registry = registries
            for n in range(3):  # the target's ids differ from the source's
                RegistryClient({"url": target_registry.url}).register(f"filler-{n}-value", _schema(f"Filler{n}"))
            ends = EndOffsets(target)
            rates: dict[str, list[float]] = {"plain": [], "translate": []}
            for round_ in range(args.rounds):
                order = ["plain", "translate"] if round_ % 2 == 0 else ["translate", "plain"]
                for mode in order:
                    topic = f"{mode}-{round_}"
                    create_topics(source, [topic], args.partitions)
                    schema_id = RegistryClient({"url": source_registry.url}).register(f"{topic}-value",
                                                                                      _schema("Reading"))
                    produce_framed(source, topic, args.partitions, args.records, schema_id)
                    sections = {"name": f"bench-{topic}", "topics": {"include": [topic]}, "engine": ENGINE_SETTINGS}
                    if mode == "translate":
                        sections["schemas"] = {"source": {"url": source_registry.url},
                                               "target": {"url": target_registry.url}}
                    plan_file = write_plan(home / f"{topic}.yaml", source, target, **sections)
                    rates[mode].append(copy_rate(plan_file, home / f"{topic}.log", ends, topic, args.partitions,
                                                 args.records))
            ratios = [t / p for t, p in zip(rates["translate"], rates["plain"], strict=True)]
            rows = [[f"round {r + 1}", f"{rates['plain'][r]:,.0f}", f"{rates['translate'][r]:,.0f}",
                     f"{ratios[r]:.2f}"] for r in range(args.rounds)]
            rows.append(["median", f"{statistics.median(rates['plain']):,.0f}",
                         f"{statistics.median(rates['translate']):,.0f}", f"{statistics.median(ratios):.2f}"])
            print_table(f"copy rate, {args.records:,} records x {args.partitions} partitions (rec/s)",
                        ["round", "plain", "translate", "translate/plain"], rows,
                        ["first record on the target to the last; the order of the two alternates by round"])
            first, second = move_subjects(source_registry, target_registry, args.subjects)
            print_table(f"moving {args.subjects:,} subjects (one version each) to an empty target registry",
                        ["move", "seconds", "subjects/s"],
                        [["first (registered)", f"{first:.1f}", f"{args.subjects / first:,.0f}"],
                         ["again (all there)", f"{second:.1f}", f"{args.subjects / second:,.0f}"]])
        finally:
            for registry in registries:
                registry.stop()
            source.stop()
            target.stop()


if __name__ == "__main__":
    main()
