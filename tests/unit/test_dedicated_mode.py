"""What `run` does beside the copy for a plan, and what the CLI echoes from an MM2 file."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from mirror_engine.cli import load_plan_argument, printable
from mirror_engine.mm2 import import_mm2_properties
from mirror_engine.plan import PlanError, plan_from_dict
from mirror_engine.replication import periodic_work

MINIMAL = "clusters = a, b\na.bootstrap.servers = h:1\nb.bootstrap.servers = h:2\na->b.enabled = true\n"


def _lines(plan_text: str) -> dict[str, str]:
    plan = import_mm2_properties(plan_text, "mm2.properties").plan
    return dict(line.split(": ", 1) for line in periodic_work(plan))


def test_an_mm2_file_runs_every_task_of_mm2s_dedicated_mode_at_mm2s_defaults():
    work = _lines(MINIMAL)
    assert work["heartbeats"] == "every 1 s"
    assert work["topic refresh (new topics and partitions)"] == "every 600 s"
    assert work["config sync"] == "at the first topic refresh, then every 600 s"
    assert work["ACL sync"] == "at each topic refresh"
    assert work["checkpoints"] == "every 60 s (by the flow's checkpoint lease holder)"
    assert work["group offset sync"] == "off"
    assert work["group refresh"] == "every 600 s"


def test_switches_and_intervals_of_the_file_reach_the_tasks():
    work = _lines(MINIMAL + "emit.heartbeats.enabled = false\nsync.topic.acls.interval.seconds = 20\n"
                            "sync.group.offsets.enabled = true\nsync.group.offsets.interval.seconds = 5\n"
                            "refresh.groups.enabled = false\n")
    assert work["heartbeats"] == "off"
    assert work["ACL sync"] == "every 20 s and at each topic refresh"
    assert work["group offset sync"] == "every 5 s (by the flow's checkpoint lease holder)"
    assert work["group refresh"] == "once, at start"


def test_a_yaml_plan_leaves_checkpoints_to_the_checkpoint_command_unless_it_asks():
    base = {"name": "p", "source": {"alias": "a", "bootstrap_servers": "h:1"},
            "target": {"alias": "b", "bootstrap_servers": "h:2"}}
    work = dict(line.split(": ", 1) for line in periodic_work(plan_from_dict(base)))
    assert work["checkpoints"].startswith("not in this process")
    assert work["config sync"] == "at the first topic refresh, then every 600 s"  # MM2's default, as a refresh reads
    # every topic's configs on both clusters
    every_refresh = plan_from_dict({**base, "sync": {"configs_interval_s": None}})
    assert dict(line.split(": ", 1) for line in periodic_work(every_refresh))["config sync"] == "at each topic refresh"
    assert "group refresh" not in work
    asked = plan_from_dict({**base, "engine": {"run_checkpoints": True}, "cutover": {"checkpoint_interval_s": 4}})
    work = dict(line.split(": ", 1) for line in periodic_work(asked))
    assert work["checkpoints"] == work["group offset sync"] == "every 4 s (by the flow's checkpoint lease holder)"
    assert work["group refresh"] == "at every round"


def test_printable_shows_control_format_and_line_separator_characters_as_escapes():
    assert printable("plain text, ümlaut") == "plain text, ümlaut"
    assert printable("a\x1b[31mred\x07\nfake line\u202egnp\u2028") == \
        "a\\x1b[31mred\\x07\\nfake line\\u202egnp\\u2028"


def _args(path: Path, flow: str | None = None) -> argparse.Namespace:
    return argparse.Namespace(mm2_config=str(path), plan=None, flow=flow)


def test_the_cli_prints_each_warning_of_the_mm2_reader_with_control_characters_escaped(tmp_path, capsys):
    path = tmp_path / "mm2.properties"
    # A key spelled with an escape sequence (as \u001b in the file) must not reach the terminal raw.
    path.write_bytes(MINIMAL.encode() + b"sync.topic.acl.enabled = true\nx\\u001b[2Jkey = 1\n")
    plan = load_plan_argument(_args(path))
    assert plan.name == "a-to-b"
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2
    assert err[0].startswith(f"warning: {path}: sync.topic.acl.enabled: ") and "did you mean" in err[0]
    assert err[1].startswith(f"warning: {path}: x\\x1b[2Jkey: ")
    assert "\x1b" not in "".join(err)


def test_the_warnings_are_printed_also_when_the_file_is_refused(tmp_path, capsys):
    path = tmp_path / "mm2.properties"
    path.write_text(MINIMAL + "b->a.enabled = true\nreplication.factr = 3\n")
    with pytest.raises(PlanError) as refused:
        load_plan_argument(_args(path))
    assert "--flow a->b" in str(refused.value)
    err = capsys.readouterr().err
    assert f"warning: {path}: replication.factr: " in err and "did you mean replication.factor?" in err
