"""The demo's terminal shows what a person follows; everything else (Spark plans, Airflow task logs, librdkafka
lines, the brokers' clients closing) goes to a log file named at the end.

`Quiet` points file descriptors 1 and 2 at the log file, so output of every kind lands there, from Python,
from C libraries and from subprocesses; `say()` writes to the terminal kept aside. The log stays the target to
the end of the process, so nothing (a client of a stopped cluster, a library at exit) follows the last line.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import IO


class Quiet:
    def __init__(self, log_path: Path) -> None:
        self.log_path = log_path
        log_path.parent.mkdir(parents=True, exist_ok=True)
        sys.stdout.flush()
        sys.stderr.flush()
        self.terminal: IO[str] = os.fdopen(os.dup(1), "w", buffering=1)
        self._log = log_path.open("w")
        os.dup2(self._log.fileno(), 1)
        os.dup2(self._log.fileno(), 2)

    def say(self, text: str = "") -> None:
        """A line for the person at the terminal (also kept in the log)."""
        self.terminal.write(text + "\n")
        print(text, flush=True)

    def close(self) -> None:
        """Everything written so far is in the log (1 and 2 stay on it: what comes after is not for the terminal)."""
        sys.stdout.flush()
        sys.stderr.flush()
        self._log.flush()
