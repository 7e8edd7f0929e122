"""For tests and benchmarks only: the internals of mirror_engine.prepare that they reach past the face for.

Modules whose attributes tests replace.

Production code imports the face (`mirror_engine.prepare`), never this module; import-linter contracts in
pyproject.toml let only `tests` and `bench` import it."""

from __future__ import annotations

from mirror_engine.prepare import reading, sequence

__all__ = [
    "reading",
    "sequence",
]
