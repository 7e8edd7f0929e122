"""For tests and benchmarks only: the internals of mirror_engine.schemas that they reach past the face for.

The rules for records whose schema id does not map.

Production code imports the face (`mirror_engine.schemas`), never this module; import-linter contracts in
pyproject.toml let only `tests` and `bench` import it."""

from __future__ import annotations

from mirror_engine.schemas.framing import CopyUnmapped, StopAtUnmapped

__all__ = [
    "CopyUnmapped",
    "StopAtUnmapped",
]
