"""`mirror-engine` with client and malloc settings overridden, to try settings before the engine has them.

    python bench/engine_with_settings.py [--consumer KEY=VALUE ...] [--producer KEY=VALUE ...] \
        [--mallopt NAME=VALUE ...] [--trim-every S] [--heap-every S] -- run --plan FILE

Every librdkafka consumer (producer) the process makes gets the `--consumer` (`--producer`) settings on top of its
own: the classes are replaced in `confluent_kafka` before the engine is imported, so this works wherever the engine
builds its clients. `--mallopt` sets glibc's malloc parameters at start (as the engine could with `mallopt`);
`--trim-every S` gives the heap's free memory back to the system every S seconds (`malloc_trim(0)` from a thread);
`--heap-every S` prints the heap's bytes in use, free and mmapped (`mallinfo2`) on stderr. The engine's code is not
changed; run another checkout's engine with `PYTHONPATH=<checkout>`. Nothing of the benchmarks is imported, so the
process's memory is the engine's own.
"""
from __future__ import annotations

import argparse
import ctypes
import sys
import threading
import time
from typing import Any

import confluent_kafka


def parse_settings(pairs: list[str]) -> dict[str, str]:
    settings = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"expected KEY=VALUE, got {pair!r}")
        settings[key] = value
    return settings


def override_clients(consumer: dict[str, str], producer: dict[str, str]) -> None:
    """Make every Consumer and Producer built from now on take these settings over its own."""
    base_consumer, base_producer = confluent_kafka.Consumer, confluent_kafka.Producer

    class Consumer(base_consumer):  # type: ignore[misc, valid-type]
        def __init__(self, config: dict[str, Any], **kwargs: Any) -> None:
            super().__init__({**config, **consumer}, **kwargs)

    class Producer(base_producer):  # type: ignore[misc, valid-type]
        def __init__(self, config: dict[str, Any], **kwargs: Any) -> None:
            super().__init__({**config, **producer}, **kwargs)

    confluent_kafka.Consumer = Consumer  # type: ignore[misc]
    confluent_kafka.Producer = Producer  # type: ignore[misc]


# glibc's mallopt parameters (malloc.h)
MALLOPT = {"trim_threshold": -1, "top_pad": -2, "mmap_threshold": -3, "mmap_max": -4, "arena_max": -8}


def set_mallopt(settings: dict[str, str]) -> None:
    """glibc `mallopt` in this process, as the engine could call it at start (before its client threads exist)."""
    libc = ctypes.CDLL("libc.so.6")
    for name, value in settings.items():
        if name not in MALLOPT:
            raise SystemExit(f"unknown mallopt parameter {name!r} ({', '.join(MALLOPT)})")
        if libc.mallopt(MALLOPT[name], int(value)) != 1:
            raise SystemExit(f"mallopt {name}={value} refused")


def trim_periodically(every_s: float) -> None:
    libc = ctypes.CDLL("libc.so.6")
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(every_s):
            libc.malloc_trim(0)

    threading.Thread(target=loop, name="malloc-trim", daemon=True).start()


class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


def report_heap_periodically(every_s: float) -> None:
    """Every S seconds one line on stderr: the heap's bytes in use, free but kept, mmapped, and Python's blocks."""
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = MallInfo2

    def loop() -> None:
        while True:
            time.sleep(every_s)
            info = libc.mallinfo2()
            print(f"heap: in use {info.uordblks / 2**20:.0f} MiB, free {info.fordblks / 2**20:.0f} MiB, mmapped "
                  f"{info.hblkhd / 2**20:.0f} MiB in {info.hblks}; python blocks {sys.getallocatedblocks():,}",
                  file=sys.stderr, flush=True)

    threading.Thread(target=loop, name="heap-report", daemon=True).start()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--consumer", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--producer", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--mallopt", action="append", default=[], metavar="NAME=VALUE",
                        help=f"glibc mallopt at start: {', '.join(MALLOPT)}")
    parser.add_argument("--trim-every", type=float, default=0.0, metavar="S")
    parser.add_argument("--heap-every", type=float, default=0.0, metavar="S",
                        help="print the heap's use (glibc mallinfo2) every S seconds on stderr")
    parser.add_argument("engine_args", nargs=argparse.REMAINDER, help="-- then the mirror-engine arguments")
    args = parser.parse_args()
    override_clients(parse_settings(args.consumer), parse_settings(args.producer))
    set_mallopt(parse_settings(args.mallopt))
    if args.trim_every > 0:
        trim_periodically(args.trim_every)
    if args.heap_every > 0:
        report_heap_periodically(args.heap_every)
    engine_args = args.engine_args[1:] if args.engine_args[:1] == ["--"] else args.engine_args
    from mirror_engine import cli  # after the clients were replaced

    return cli.main(engine_args)


if __name__ == "__main__":
    sys.exit(main())
