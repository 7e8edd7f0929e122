"""For tests and benchmarks only: the internals of mirror_engine.plan that they reach past the face for.

The memo of a filter's answers.

Production code imports the face (`mirror_engine.plan`), never this module; import-linter contracts in
pyproject.toml let only `tests` and `bench` import it."""

from __future__ import annotations

from mirror_engine.plan.filters import RememberedAnswers

__all__ = [
    "RememberedAnswers",
]
