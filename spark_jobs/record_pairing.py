"""Record-by-record pairing of one partition's copy, on arrays of (offset, fingerprint) per side.

A record is known by its fingerprint (key, value, headers, timestamp) and its occurrence number among
the records of its partition with the same fingerprint, in offset order. Records pair by (fingerprint,
occurrence): a source record without a pair is missing on the target, a target record without a pair is
extra (a duplicate when its fingerprint is on the source); pairs whose target offsets run backwards
against their source order are out of order. An exact copy, the usual case, is recognised in one
vectorised comparison (the same fingerprints in the same order) before any pairing is done.

Pure numpy and no pyspark: `range_validation` calls `pair_partition` once per Kafka partition, in a Spark
task or in the calling process.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class PartitionFindings:
    """What one partition's pairing found; each list holds at most `limit` offsets, lowest first."""

    source_records: int
    target_records: int
    missing: list[int] = field(default_factory=list)  # source offsets
    extra: list[int] = field(default_factory=list)  # target offsets
    extra_on_source: list[bool] = field(default_factory=list)  # per extra record: its fingerprint is on the source
    out_of_order: list[int] = field(default_factory=list)  # source offsets
    unmapped: int = 0  # source records whose schema id did not map to the target's (compared as they are)


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
