"""For tests and benchmarks only: the internals of mirror_engine.flow that they reach past the face for.

The progress record's format and its module.

Production code imports the face (`mirror_engine.flow`), never this module; import-linter contracts in
pyproject.toml let only `tests` and `bench` import it."""

from __future__ import annotations

from mirror_engine.flow import progress
from mirror_engine.flow.progress import PROGRESS_NAME, parse_progress

__all__ = [
    "PROGRESS_NAME",
    "parse_progress",
    "progress",
]
