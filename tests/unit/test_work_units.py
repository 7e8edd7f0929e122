"""A source partition's work unit: the same in every worker and every release, and the units share a large flow
evenly. (The units topic and the group over it are exercised by the worker tests on real brokers.)"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter

from mirror_engine.flow import MAX_WORK_UNITS, work_unit


def test_a_partition_s_unit_does_not_depend_on_the_process():
    """Workers of one flow run in different processes (and may run different releases during an upgrade): a unit
    computed with Python's salted `hash` would differ between them and two workers would copy the same partition."""
    keys = [("orders", 0), ("orders", 7), ("payments.eu", 3), ("a" * 200, 12)]
    here = [work_unit(topic, partition, MAX_WORK_UNITS) for topic, partition in keys]
    elsewhere = subprocess.run(
        [sys.executable, "-c", "from mirror_engine.flow import work_unit, MAX_WORK_UNITS; "
         f"print([work_unit(t, p, MAX_WORK_UNITS) for t, p in {keys!r}])"],
        capture_output=True, text=True, check=True, env={"PYTHONHASHSEED": "12345"}, timeout=60).stdout
    assert elsewhere.strip() == str(here)
    # Pinned: a release that changed the mapping would hand a partition to two workers while both releases run.
    assert here == [46, 53, 30, 36]


def test_a_topic_s_partitions_take_consecutive_units():
    """A small flow (as many units as partitions) splits partition by partition, as a group over the partitions."""
    assert sorted(work_unit("orders", p, 8) for p in range(8)) == list(range(8))


def test_ten_thousand_partitions_share_the_units_evenly():
    units = Counter(work_unit(f"topic-{t}", p, MAX_WORK_UNITS) for t in range(1000) for p in range(10))
    assert len(units) == MAX_WORK_UNITS
    mean = 10_000 / MAX_WORK_UNITS
    assert 0.75 * mean < min(units.values()) and max(units.values()) < 1.25 * mean, units.most_common(3)
