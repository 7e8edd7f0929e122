"""The benchmark scripts import shared code from `bench/harness.py` and never each other in a circle."""

from __future__ import annotations

import ast
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _imports() -> dict[str, set[str]]:
    """Script -> the bench scripts it imports (at any depth of its code, lazy imports too)."""
    scripts = {path.stem for path in BENCH.glob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in BENCH.glob("*.py"):
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module.split(".")[0])
            elif isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
        graph[path.stem] = found & scripts - {path.stem}
    return graph


def _circle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1 on the path, 2 done

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt] if nxt in path else [*path, nxt]
            if nxt not in state and (found := visit(nxt, [*path, nxt])):
                return found
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start, [start])):
            return found
    return None


def test_the_bench_scripts_import_each_other_in_no_circle():
    graph = _imports()
    assert _circle(graph) is None, " -> ".join(_circle(graph) or [])
    assert graph["harness"] == set()


def test_the_circle_finder_finds_one():
    assert _circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _circle({"a": {"b"}, "b": set()}) is None
