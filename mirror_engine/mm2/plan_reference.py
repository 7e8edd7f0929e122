"""Where a plan comes from, as the DAGs, the cockpit, the Spark jobs and a started worker name it: a YAML plan file,
or one flow of a MirrorMaker 2 file (`FILE.properties#a->b`), so an MM2 file in the plans folder gets a migration
DAG for each flow it enables, and every task of that DAG reads the same flow again. `#failback` at the end names
the way back of that plan after its cutover (`mirror_engine.failback`, which builds it from the forward plan and
what the target holds: `load` gives the forward plan)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from mirror_engine.mm2.reader import load_mm2_config
from mirror_engine.plan import MigrationPlan, load_plan

MM2_SUFFIX = ".properties"
_FLOW_MARK = "#"
FAILBACK_MARK = "#failback"


@dataclass(frozen=True)
class PlanReference:
    path: Path
    flow: str | None = None  # an MM2 file's flow ("a->b"); None: a YAML plan, or the one flow the file enables
    failback: bool = False  # the way back of the plan, not the plan

    @classmethod
    def parse(cls, text: str | Path) -> PlanReference:
        """`plans/shop.yaml`, `plans/mm2.properties` or `plans/mm2.properties#a->b`, each maybe with `#failback`."""
        text = str(text)
        failback = text.endswith(FAILBACK_MARK)
        text = text.removesuffix(FAILBACK_MARK) if failback else text
        match = re.fullmatch(rf"(.+{re.escape(MM2_SUFFIX)}){_FLOW_MARK}(.+)", text)
        return cls(Path(match[1]), match[2], failback) if match else cls(Path(text), None, failback)

    def __str__(self) -> str:
        plan = f"{self.path}{_FLOW_MARK}{self.flow}" if self.flow else str(self.path)
        return plan + (FAILBACK_MARK if self.failback else "")

    def way_back(self) -> PlanReference:
        """The reference of this plan's way back."""
        return PlanReference(self.path, self.flow, failback=True)

    @property
    def is_mm2(self) -> bool:
        return self.path.suffix == MM2_SUFFIX

    def load(self) -> MigrationPlan:
        """The plan, read and validated now (PlanError, or Mm2PlanError for an MM2 file, with every problem); for a
        way back, the forward plan it is built from."""
        return load_mm2_config(self.path, self.flow) if self.is_mm2 else load_plan(self.path)

    def cli_arguments(self) -> list[str]:
        """The plan's options of a `mirror-engine` command, the file's path made absolute."""
        path = str(self.path.resolve())
        way_back = ["--failback"] if self.failback else []
        if not self.is_mm2:
            return ["--plan", path, *way_back]
        return ["--mm2-config", path, *(["--flow", self.flow] if self.flow else []), *way_back]


def flow_references(path: Path, plans: list[MigrationPlan]) -> list[PlanReference]:
    """A reference to each flow of an MM2 file, given the plans of the flows it enables."""
    return [PlanReference(path, f"{plan.source.alias}->{plan.target.alias}") for plan in plans]
