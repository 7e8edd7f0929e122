"""The backfill's task alone: `spark_jobs.range_copy.copy_partition_ranges`, the function each Spark task runs,
copying the bench's data set (`backfill_validation.py`) from a real source broker to a real target broker on
loopback, every partition in one task as a local[1] session's only task copies them; no Spark.

    .venv/bin/python bench/backfill_producer.py --records 300000
    py-spy record --idle -r 250 -f raw -o profile.txt -- .venv/bin/python bench/backfill_producer.py

It prints the copy's records/s and CPU seconds (this process: the Python loop and librdkafka's threads): the
ceiling of one Python worker's copy, without Spark.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import pyarrow as pa
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_local.cluster import start_pair
from spark_jobs.range_copy import copy_partition_ranges

PARTITIONS = 8


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from backfill_validation import _load

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=300_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-producer-") as root:
        source, target = start_pair(Path(root))
        try:
            _load(source, "history", args.records)
            admin = AdminClient(target.client_config())
            admin.create_topics([NewTopic("src.history", PARTITIONS, 1)])["src.history"].result()
            time.sleep(1)
            per_partition = [args.records // PARTITIONS + (1 if p < args.records % PARTITIONS else 0)
                             for p in range(PARTITIONS)]
            ranges = [{"topic": "history", "partition": p, "start": 0, "end": per_partition[p],
                       "target_topic": "src.history", "target_start": 0} for p in range(PARTITIONS)]
            started, cpu = time.perf_counter(), _cpu()
            ids = pa.RecordBatch.from_pydict({"id": [0]})  # one share: every partition, side by side
            list(copy_partition_ranges(iter([ids]), source.client_config(), target.client_config(), [ranges]))
            copied, cpu = time.perf_counter() - started, _cpu() - cpu
            print(f"{args.records:,} records copied in {copied:.1f} s ({args.records / copied:,.0f} records/s), "
                  f"{cpu:.1f} s of CPU in this process")
        finally:
            source.stop()
            target.stop()


if __name__ == "__main__":
    main()
