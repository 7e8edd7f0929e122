"""For tests and benchmarks only: the internals of mirror_engine.observe that they reach past the face for.

Modules whose attributes tests and benchmarks replace or read.

Production code imports the face (`mirror_engine.observe`), never this module; import-linter contracts in
pyproject.toml let only `tests` and `bench` import it."""

from __future__ import annotations

from mirror_engine.observe import flow_view, reports, status

__all__ = [
    "flow_view",
    "reports",
    "status",
]
