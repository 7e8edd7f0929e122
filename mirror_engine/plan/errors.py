"""The error a plan that cannot be used raises, with every problem listed."""

from __future__ import annotations


class PlanError(ValueError):
    """A plan that cannot be used; `problems` holds one `field.path: what is wrong` line each."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.problems = problems
        listed = "\n".join(f"  - {problem}" for problem in problems)
        super().__init__(f"invalid migration plan {source}: {len(problems)} problem(s)\n{listed}")

