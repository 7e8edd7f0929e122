"""What bench/scale.py measures a shape with: the shape, a version of the engine, and the figures of one run
(apart, so that the modules of its steps can name them without importing the script)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Shape:
    topics: int
    partitions: int  # per topic
    groups: int

    @classmethod
    def parse(cls, text: str) -> Shape:
        topics, partitions, groups = (int(part) for part in text.lower().split("x"))
        return cls(topics, partitions, groups)

    @property
    def total_partitions(self) -> int:
        return self.topics * self.partitions

    def __str__(self) -> str:
        return f"{self.total_partitions:,} partitions ({self.topics:,} x {self.partitions}), {self.groups:,} groups"


@dataclass
class Figures:
    """What one shape measured; None where a step failed or did not run."""

    seconds: dict[str, float | None] = field(default_factory=dict)
    rate: float | None = None  # records/s of the engine's copy, from its first record to the last
    raw_rate: float | None = None  # records/s of a plain producer into as many partitions
    raw_spread_rate: float | None = None  # the same through producers spread over the topics as the engine's
    peak_rss_mib: float | None = None
    largest_status_kib: float | None = None
    status_kib_per_interval: float | None = None
    log_lines_per_minute: float | None = None
    copy_cpu_s: float | None = None  # CPU seconds of the engine from its launch to the backlog copied
    steady_cpu_per_minute: float | None = None  # CPU seconds of the engine a minute once caught up (`--steady`)
    steady_librdkafka_cpu_per_minute: float | None = None  # of which in librdkafka's threads
    launch_load: float | None = None  # the load average as `run` was launched (`--quiet-launch`)
    launch_brokers_cores: float | None = None  # the brokers' CPU then, in cores


@dataclass
class Code:
    """A version of the engine to measure: `label`, and the folder holding its `mirror_engine` (None: this one)."""

    label: str
    path: Path | None = None

    @classmethod
    def parse(cls, text: str) -> Code:
        """`LABEL=FOLDER` (a folder holding a `mirror_engine` package) or `LABEL` alone (this checkout)."""
        label, _, path = text.partition("=")
        if not path:
            return cls(label)
        folder = Path(path).resolve()
        if not (folder / "mirror_engine" / "__init__.py").is_file():
            raise argparse.ArgumentTypeError(f"--code {text}: {folder} holds no mirror_engine package")
        return cls(label, folder)

    def compile_bytecode(self) -> None:
        """Its `mirror_engine` (and this checkout's `kafka_local`, which its processes import from here) compiled to
        bytecode, as `make setup` compiles the checkout: else, where Python may not write bytecode
        (PYTHONDONTWRITEBYTECODE, set on this machine), every command compiles about a hundred modules from source
        at each start, 0.15-0.2 s of CPU before its first record. Modules already compiled and current are skipped."""
        folders = [(self.path or ROOT) / "mirror_engine", ROOT / "kafka_local"]
        subprocess.run([sys.executable, "-m", "compileall", "-q", *map(str, folders)], check=True)

    def knows_plan_field(self, name: str) -> bool:
        """Whether its plan model has a field of this name (an earlier version refuses a plan naming one it lacks)."""
        package = (self.path or ROOT) / "mirror_engine"
        return any(f"{name}:" in module.read_text() for module in package.rglob("*.py"))

    def env(self) -> dict[str, str]:
        """The environment of its processes (which run in the work folder: the current one would come first)."""
        first = [str(self.path or ROOT), str(ROOT)]
        return {**os.environ, "PYTHONPATH": os.pathsep.join([*first, os.environ.get("PYTHONPATH", "")])}
