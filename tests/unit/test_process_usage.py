"""The benchmarks' account of a child process: its own peak RSS, not its parent's."""

from __future__ import annotations

import subprocess
import sys

from kafka_local.mm2 import stop_process

MIB = 2**20


def test_a_childs_peak_rss_is_its_own_not_the_memory_its_parent_held_when_starting_it() -> None:
    parent_data = bytearray(400 * MIB)
    parent_data[::4096] = b"\x01" * len(parent_data[::4096])  # touched, so resident in the parent
    child = subprocess.Popen([sys.executable, "-c", "data = bytearray(60 * 2**20); data[::4096] = b'1' * len("
                              "data[::4096]); print(flush=True); import time; time.sleep(60)"],
                             stdout=subprocess.PIPE)
    assert child.stdout is not None and child.stdout.readline()  # the child holds its 60 MiB now

    usage = stop_process(child, timeout_s=10)

    assert 60 * MIB < usage.max_rss_bytes < 200 * MIB
    assert usage.returncode != 0  # stopped by SIGTERM
    del parent_data
