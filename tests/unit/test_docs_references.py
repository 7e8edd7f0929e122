"""The documentation stays true to the code: the plan reference names every field of the plan model and no other,
the CLI reference every command and option of `mirror-engine` and no other, every relative link of the README and
the docs pages leads to a file of the repository, and the two READMEs stay short."""

from __future__ import annotations

import argparse
import re
import types
import typing
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel

from mirror_engine.cli import build_parser
from mirror_engine.plan import MigrationPlan

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PLAN_PAGE = DOCS / "plan-reference.md"
CLI_PAGE = DOCS / "cli-reference.md"
LINKED_PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md")), *sorted((ROOT / "bench").glob("*.md"))]

_BACKTICKED = re.compile(r"`([^`]+)`")
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][A-Za-z0-9-]*)")


# ---- the plan reference --------------------------------------------------------------------------------------

def _models_in(annotation: object) -> list[type[BaseModel]]:
    """The pydantic models an annotation holds (itself, or inside Optional / Union / Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found: list[type[BaseModel]] = []
    for argument in typing.get_args(annotation):
        found += _models_in(argument)
    return found


def plan_keys(model: type[BaseModel] = MigrationPlan, prefix: str = "") -> Iterator[str]:
    """Every leaf field of the plan model as a dotted key (`cutover.max_lag_s`); a section is walked, not listed."""
    for name, field in model.model_fields.items():
        sections = _models_in(field.annotation)
        if sections:
            yield from plan_keys(sections[0], f"{prefix}{name}.")
        else:
            yield prefix + name


def documented_plan_keys(text: str) -> set[str]:
    """The keys the plan reference documents: those in backticks in the first cell of its table rows."""
    keys = set()
    for line in text.splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            first = line.split("|")[1]
            keys.update(key for key in _BACKTICKED.findall(first))
    return keys - {"key"}


def test_the_walk_finds_the_plan_sections_fields():
    keys = set(plan_keys())
    assert {"name", "source.alias", "target.client", "cutover.max_lag_s", "engine.exactly_once"} <= keys
    assert "cutover" not in keys and "engine" not in keys


def test_every_plan_field_is_documented():
    documented = documented_plan_keys(PLAN_PAGE.read_text())
    missing = sorted(set(plan_keys()) - documented)
    assert not missing, f"docs/plan-reference.md does not document: {', '.join(missing)}"


def test_the_plan_reference_documents_no_field_the_plan_lacks():
    extra = sorted(documented_plan_keys(PLAN_PAGE.read_text()) - set(plan_keys()))
    assert not extra, f"docs/plan-reference.md documents keys the plan model does not have: {', '.join(extra)}"


# ---- the CLI reference ---------------------------------------------------------------------------------------

_NOT_OPTIONS = (argparse._HelpAction, argparse._SubParsersAction)


def _options(parser: argparse.ArgumentParser) -> set[str]:
    """The parser's own option strings (`-v`, `--verbose`), without --help."""
    return {option for action in parser._actions if not isinstance(action, _NOT_OPTIONS)
            for option in action.option_strings}


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _positional_choices(parser: argparse.ArgumentParser) -> set[str]:
    return {str(choice) for action in parser._actions if not action.option_strings and action.choices
            and not isinstance(action, argparse._SubParsersAction) for choice in action.choices}


def cli_sections(text: str) -> dict[str, str]:
    """{command: its section's text} for the page's `## mirror-engine <command>` headings."""
    sections: dict[str, str] = {}
    current = None
    for line in text.splitlines():
        heading = re.fullmatch(r"## `mirror-engine (\S+)`", line.strip())
        if heading:
            current = heading.group(1)
            sections[current] = ""
        elif line.startswith("## "):
            current = None
        elif current is not None:
            sections[current] += line + "\n"
    return sections


def _first_cells(text: str) -> set[str]:
    """What the first cells of the text's table rows name in backticks, `-v`, `--verbose` counted apart."""
    cells = set()
    for line in text.splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            cells.update(_BACKTICKED.findall(line.split("|")[1]))
    return cells


PARSER = build_parser()
COMMANDS = _commands(PARSER)
GLOBAL_OPTIONS = _options(PARSER)
PLAN_OPTIONS = {"--plan", "--mm2-config", "--flow", "--json"}


def test_the_parser_walk_finds_commands_and_options():
    assert {"plan", "prepare", "run", "worker", "switch-group", "switch-producers"} <= set(COMMANDS)
    assert {"--group", "--fence", "--rollback"} <= _options(COMMANDS["switch-group"])
    assert "--log-level" in GLOBAL_OPTIONS


def test_every_command_has_a_section_and_no_section_names_a_command_the_parser_lacks():
    sections = cli_sections(CLI_PAGE.read_text())
    assert set(sections) == set(COMMANDS), (
        f"missing sections: {sorted(set(COMMANDS) - set(sections))}; "
        f"sections of no command: {sorted(set(sections) - set(COMMANDS))}")


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_option_of_a_command_is_documented_in_its_section(command):
    section = cli_sections(CLI_PAGE.read_text()).get(command, "")
    own = _options(COMMANDS[command])
    # The plan options are documented once, in their own table, for every command that has them all.
    shared = PLAN_OPTIONS if own >= PLAN_OPTIONS else set()
    table = _first_cells(section)
    missing = sorted((own - shared) - table)
    missing += sorted(choice for choice in _positional_choices(COMMANDS[command]) if choice not in table)
    assert not missing, f"`mirror-engine {command}` in docs/cli-reference.md lacks: {', '.join(missing)}"
    named = {cell for cell in table if cell.startswith("-")}
    assert named <= own, f"`mirror-engine {command}`'s table names options it lacks: {sorted(named - own)}"


def test_the_shared_options_are_documented():
    missing = sorted((GLOBAL_OPTIONS | PLAN_OPTIONS) - _first_cells(CLI_PAGE.read_text()))
    assert not missing, f"docs/cli-reference.md does not document: {', '.join(missing)}"


def test_the_cli_reference_names_no_option_the_parser_lacks():
    known = GLOBAL_OPTIONS.union(*(_options(parser) for parser in COMMANDS.values()))
    named = set(_OPTION.findall(CLI_PAGE.read_text()))
    unknown = sorted(option for option in named if option not in known)
    assert not unknown, f"docs/cli-reference.md names options mirror-engine does not have: {', '.join(unknown)}"


# ---- links and lengths ---------------------------------------------------------------------------------------

def links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)  # code blocks hold no links
    return _LINK.findall(text)


def test_the_pages_exist():
    assert {"README.md", "architecture.md", "plan-reference.md", "cli-reference.md", "mm2-compatibility.md",
            "secured-clusters.md", "zookeeper-era-sources.md", "airflow.md", "operations.md",
            "guarantees.md"} <= {page.name for page in DOCS.glob("*.md")}


@pytest.mark.parametrize("page", LINKED_PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_link_leads_to_a_file_of_the_repository(page):
    problems = []
    for target in links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target, flags=re.I):
            problems.append(f"{target}: leaves the repository")
            continue
        path = target.split("#", 1)[0]
        if not path:
            continue  # an anchor on the same page
        resolved = (page.parent / path).resolve()
        if not resolved.is_relative_to(ROOT):
            problems.append(f"{target}: leaves the repository")
        elif not resolved.exists():
            problems.append(f"{target}: no such file")
    assert not problems, f"{page.relative_to(ROOT)}: " + "; ".join(problems)


@pytest.mark.parametrize("page", LINKED_PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_no_page_points_outside_the_repository(page):
    text = page.read_text()
    assert "../shared" not in text
    # Outside code (where an address is a setting's example value, not a link), no web address at all.
    prose = re.sub(r"`[^`\n]*`", "", re.sub(r"```.*?```", "", text, flags=re.S))
    addresses = re.findall(r"https?://\S+", prose)
    assert not addresses, f"{page.relative_to(ROOT)} points outside the repository: {', '.join(addresses)}"


@pytest.mark.parametrize(("page", "most"), [("README.md", 250), ("bench/README.md", 400)])
def test_the_readmes_stay_short(page, most):
    lines = len((ROOT / page).read_text().splitlines())
    assert lines <= most, f"{page} has {lines} lines; at most {most}"


def test_the_test_itself_sees_through_unions():
    assert _models_in(typing.Optional[MigrationPlan]) == [MigrationPlan]  # noqa: UP045
    assert _models_in(types.NoneType) == []


# ---- the guarantees' tests -----------------------------------------------------------------------------------

def named_tests(text: str) -> list[tuple[str, str | None]]:
    """(test file, test function or None) for each test a page names: `tests/.../test_x.py::test_y`, a bare
    `test_x.py` (in tests/unit or tests/integration), and `::test_z` after a file in the same table cell."""
    named = []
    for line in text.splitlines():
        for cell in line.split("|"):
            current = None
            for item in _BACKTICKED.findall(cell):
                path, _, function = item.partition("::")
                if path.endswith(".py") and Path(path).name.startswith("test_"):
                    current = path
                    named.append((current, function or None))
                elif not path and function and current:
                    named.append((current, function))
    return named


def _test_file(path: str) -> Path | None:
    candidates = [ROOT / path] if "/" in path else [ROOT / "tests" / "integration" / path,
                                                     ROOT / "tests" / "unit" / path]
    return next((candidate for candidate in candidates if candidate.is_file()), None)


def test_every_test_the_guarantees_name_exists():
    named = named_tests((DOCS / "guarantees.md").read_text())
    assert len(named) > 40
    problems = []
    for path, function in named:
        found = _test_file(path)
        if found is None:
            problems.append(f"{path}: no such test file")
        elif function and not re.search(rf"^(async )?def {re.escape(function)}\(", found.read_text(), flags=re.M):
            problems.append(f"{path}::{function}: no such test")
    assert not problems, "docs/guarantees.md: " + "; ".join(problems)
