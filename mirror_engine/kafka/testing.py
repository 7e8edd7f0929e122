"""For tests and benchmarks only: the internals of mirror_engine.kafka that they reach past the face for.

Modules whose attributes tests replace, and the sizes of batched reads.

Production code imports the face (`mirror_engine.kafka`), never this module; import-linter contracts in
pyproject.toml let only `tests` and `bench` import it."""

from __future__ import annotations

from mirror_engine.kafka import clusters, internal_reader, topics
from mirror_engine.kafka.topics import CONFIGS_READ_BY_NAME, LIST_OFFSETS_BATCH, LIST_OFFSETS_IN_FLIGHT

__all__ = [
    "CONFIGS_READ_BY_NAME",
    "LIST_OFFSETS_BATCH",
    "LIST_OFFSETS_IN_FLIGHT",
    "clusters",
    "internal_reader",
    "topics",
]
