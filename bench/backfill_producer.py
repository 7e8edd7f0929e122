"""The backfill's Python side alone: `spark_jobs.range_copy.copy_arrow_batches`, the function each Spark task
runs, fed Arrow batches shaped as Spark's Kafka source hands them (10,000 rows, one Kafka partition each), copying
to a real target broker on loopback, one partition after another as the tasks of a local[1] session would.

    .venv/bin/python bench/backfill_producer.py --records 300000
    py-spy record --idle -r 250 -f raw -o profile.txt -- .venv/bin/python bench/backfill_producer.py

It prints the time spent building the batches apart from the copy (Spark's JVM builds them in a real job), and
the copy's records/s: the ceiling of one Python worker's copy, without Spark, the source read or the shuffle.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import pyarrow as pa
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_local.cluster import start_cluster
from spark_jobs.range_copy import copy_arrow_batches

PARTITIONS = 8
BATCH = 10_000  # the Arrow batch size Spark hands to mapInArrow by default
SCHEMA = pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()),
                    ("key", pa.binary()), ("value", pa.binary()),
                    ("headers", pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))),
                    ("ts", pa.int64())])


def batches(partition: int, records: int) -> list[pa.RecordBatch]:
    """The bench's data set (`backfill_validation.py`): 100 B of key and value, one header, for one partition."""
    out, filler, now = [], b"x" * 80, int(time.time() * 1000)
    for start in range(0, records, BATCH):
        seqs = [i * PARTITIONS + partition for i in range(start, min(records, start + BATCH))]
        out.append(pa.RecordBatch.from_pydict({
            "topic": ["history"] * len(seqs), "partition": [partition] * len(seqs),
            "offset": list(range(start, start + len(seqs))),
            "key": [b"key-%05d" % (i % 10_000) for i in seqs], "value": [b"%010d" % i + filler for i in seqs],
            "headers": [[{"key": "seq", "value": b"%d" % i}] for i in seqs], "ts": [now + i for i in seqs]},
            schema=SCHEMA))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=300_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-producer-") as root:
        target = start_cluster("target", Path(root) / "target")
        try:
            admin = AdminClient(target.client_config())
            admin.create_topics([NewTopic("src.history", PARTITIONS, 1)])["src.history"].result()
            time.sleep(1)
            per_partition = args.records // PARTITIONS
            built = time.perf_counter()
            data = {p: batches(p, per_partition) for p in range(PARTITIONS)}
            built = time.perf_counter() - built
            plan_parts = {("history", p): {"target_topic": "src.history", "target_start": 0}
                          for p in range(PARTITIONS)}
            started = time.perf_counter()
            for p in range(PARTITIONS):  # one task per Kafka partition, one after another
                list(copy_arrow_batches(iter(data[p]), target.client_config(), plan_parts))
            copied = time.perf_counter() - started
            records = per_partition * PARTITIONS
            print(f"batches built in {built:.1f} s (not timed below); {records:,} records copied in {copied:.1f} s: "
                  f"{records / copied:,.0f} records/s")
        finally:
            target.stop()


if __name__ == "__main__":
    main()
