"""Record-by-record pairing of one partition's copy, on arrays of (offset, fingerprint) per side.

A record is known by its fingerprint (key, value, headers, timestamp) and its occurrence number among
the records of its partition with the same fingerprint, in offset order. Records pair by (fingerprint,
occurrence): a source record without a pair is missing on the target, a target record without a pair is
extra (a duplicate when its fingerprint is on the source); pairs whose target offsets run backwards
against their source order are out of order. An exact copy, the usual case, is recognised in one
vectorised comparison (the same fingerprints in the same order) before any pairing is done.

Pure numpy and no pyspark: Spark runs `pair_partitions` once per Spark partition (after one shuffle of the
small (partition, offset, fingerprint) rows by Kafka partition, no sort), and a small validation without
Spark calls `pair_partition` directly.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

FINDINGS_SCHEMA = ("topic string, partition int, timed boolean, stampless boolean, source_records long, "
                   "target_records long, missing array<long>, extra array<long>, extra_on_source array<boolean>, "
                   "out_of_order array<long>")


@dataclass
class PartitionFindings:
    """What one partition's pairing found; each list holds at most `limit` offsets, lowest first."""

    source_records: int
    target_records: int
    missing: list[int] = field(default_factory=list)  # source offsets
    extra: list[int] = field(default_factory=list)  # target offsets
    extra_on_source: list[bool] = field(default_factory=list)  # per extra record: its fingerprint is on the source
    out_of_order: list[int] = field(default_factory=list)  # source offsets


def _occurrences(fps: np.ndarray) -> np.ndarray:
    """Per record (given in offset order), how many earlier records have the same fingerprint."""
    order = np.argsort(fps, kind="stable")  # by fingerprint, offset order kept among equals
    ranked = fps[order]
    starts = np.ones(len(ranked), dtype=bool)
    starts[1:] = ranked[1:] != ranked[:-1]
    first = np.maximum.accumulate(np.where(starts, np.arange(len(ranked)), 0))
    occurrence = np.empty(len(fps), dtype=np.int64)
    occurrence[order] = np.arange(len(ranked)) - first
    return occurrence


def pair_partition(source_offsets: Any, source_fps: Any, target_offsets: Any, target_fps: Any,
                   limit: int) -> PartitionFindings:
    """Pair one partition's source and target records (arrays in any order) and say what does not match."""
    s_off, s_fp = np.asarray(source_offsets, dtype=np.int64), np.asarray(source_fps, dtype=np.int64)
    t_off, t_fp = np.asarray(target_offsets, dtype=np.int64), np.asarray(target_fps, dtype=np.int64)
    s_order, t_order = np.argsort(s_off, kind="stable"), np.argsort(t_off, kind="stable")
    s_off, s_fp, t_off, t_fp = s_off[s_order], s_fp[s_order], t_off[t_order], t_fp[t_order]
    findings = PartitionFindings(len(s_off), len(t_off))
    if len(s_fp) == len(t_fp) and np.array_equal(s_fp, t_fp):
        return findings  # every record paired with the one at the same place in the same order
    s_occ, t_occ = _occurrences(s_fp), _occurrences(t_fp)
    # Both sides in one list, sorted by (fingerprint, occurrence, side): a pair is a source row followed by
    # a target row with the same fingerprint and occurrence.
    fp, occ = np.concatenate([s_fp, t_fp]), np.concatenate([s_occ, t_occ])
    side = np.concatenate([np.zeros(len(s_fp), dtype=np.int8), np.ones(len(t_fp), dtype=np.int8)])
    row = np.concatenate([np.arange(len(s_fp)), np.arange(len(t_fp))])
    order = np.lexsort((side, occ, fp))
    fp, occ, side, row = fp[order], occ[order], side[order], row[order]
    pair_at = np.flatnonzero((fp[:-1] == fp[1:]) & (occ[:-1] == occ[1:]) & (side[:-1] == 0) & (side[1:] == 1))
    s_paired, t_paired = row[pair_at], row[pair_at + 1]
    s_unpaired = np.ones(len(s_fp), dtype=bool)
    s_unpaired[s_paired] = False
    t_unpaired = np.ones(len(t_fp), dtype=bool)
    t_unpaired[t_paired] = False
    findings.missing = s_off[s_unpaired][:limit].tolist()
    extra = np.flatnonzero(t_unpaired)[:limit]
    findings.extra = t_off[extra].tolist()
    findings.extra_on_source = np.isin(t_fp[extra], s_fp).tolist()
    # Pairs in source order: a target offset below the one before it is out of order.
    by_source = np.argsort(s_paired, kind="stable")
    paired_targets, paired_sources = t_off[t_paired[by_source]], s_off[s_paired[by_source]]
    backwards = np.flatnonzero(paired_targets[1:] < paired_targets[:-1]) + 1
    findings.out_of_order = paired_sources[backwards][:limit].tolist()
    return findings


def pair_partitions(batches: Iterable[Any], topics: Sequence[str], limit: int) -> Iterator[Any]:
    """The function `mapInArrow` runs per Spark partition, after a shuffle by Kafka partition.

    Batches of rows (key, offset, fp, fp_untimed, stampless, side): key = topic index in `topics` << 32 | Kafka
    partition, side 0 the source, fp_untimed the fingerprint without the timestamp, stampless a source record
    without a timestamp (format v0). Every row of a Kafka partition, both sides, is in the same Spark partition,
    which may hold several Kafka partitions. Per Kafka partition present: a findings row paired by `fp` (timed
    true, stampless when any of its source records has no timestamp) and, when that one is not clean, a second
    paired by `fp_untimed` (timed false), for the driver to choose once it knows which topics hold records
    without a timestamp. A clean timed pairing is clean without the timestamp too."""
    import pyarrow as pa

    names = ("key", "offset", "fp", "fp_untimed", "stampless", "side")
    columns: dict[str, list[np.ndarray]] = {name: [] for name in names}
    for batch in batches:
        for name, parts in columns.items():
            parts.append(batch.column(name).to_numpy(zero_copy_only=False))
    if not sum(len(part) for part in columns["key"]):
        return
    key, offset, fp, fp_untimed, stampless, side = (np.concatenate(columns.pop(name)) for name in names)
    schema = pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("timed", pa.bool_()),
                        ("stampless", pa.bool_()), ("source_records", pa.int64()), ("target_records", pa.int64()),
                        ("missing", pa.list_(pa.int64())), ("extra", pa.list_(pa.int64())),
                        ("extra_on_source", pa.list_(pa.bool_())), ("out_of_order", pa.list_(pa.int64()))])
    rows = []
    for group in np.unique(key).tolist():
        in_group = key == group
        on_source, on_target = in_group & (side == 0), in_group & (side != 0)
        row = {"topic": topics[group >> 32], "partition": group & 0xFFFFFFFF,
               "stampless": bool(stampless[on_source].any())}
        for timed, fps in ((True, fp), (False, fp_untimed)):
            found = pair_partition(offset[on_source], fps[on_source], offset[on_target], fps[on_target], limit)
            rows.append({**row, "timed": timed, "source_records": found.source_records,
                         "target_records": found.target_records, "missing": found.missing, "extra": found.extra,
                         "extra_on_source": found.extra_on_source, "out_of_order": found.out_of_order})
            if not (found.missing or found.extra or found.out_of_order):
                break
    yield pa.RecordBatch.from_pylist(rows, schema=schema)
