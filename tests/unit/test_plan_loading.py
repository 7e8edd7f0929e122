"""Loading a hostile plan file: every one fails fast with one problem naming the file and what is wrong.

Nothing a plan file holds may hang the loader, exhaust memory, crash it with a traceback, or be read
two ways (a key given twice).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from mirror_engine.plan import PlanError, load_plan

GOOD_YAML = """\
name: shop
source:
  alias: src
  bootstrap_servers: 127.0.0.1:19092
target:
  alias: tgt
  bootstrap_servers: 127.0.0.1:29092
"""


def _only_problem(path: Path) -> str:
    started = time.monotonic()
    with pytest.raises(PlanError) as raised:
        load_plan(path)
    assert time.monotonic() - started < 1.0, "refusing a plan must take well under a second"
    assert str(path) in str(raised.value)
    problems = raised.value.problems
    assert len(problems) == 1, problems
    return problems[0]


def _write(tmp_path: Path, content: str | bytes, name: str = "plan.yaml") -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


def test_the_good_plan_loads(tmp_path):
    assert load_plan(_write(tmp_path, GOOD_YAML)).name == "shop"


def test_anchors_used_as_people_use_them_still_load(tmp_path):
    shared = GOOD_YAML.replace("  bootstrap_servers: 127.0.0.1:19092\n",
                               "  bootstrap_servers: 127.0.0.1:19092\n  client: &sasl {sasl.mechanism: PLAIN}\n")
    shared = shared.replace("  bootstrap_servers: 127.0.0.1:29092\n", "  bootstrap_servers: 127.0.0.1:29092\n"
                            "  client: *sasl\n")
    plan = load_plan(_write(tmp_path, shared))
    assert plan.target.client == {"sasl.mechanism": "PLAIN"}


def test_a_file_over_one_mib_is_refused_without_parsing_it(tmp_path):
    problem = _only_problem(_write(tmp_path, GOOD_YAML + "description: " + "x" * (1 << 20) + "\n"))
    assert problem.startswith("(file): ") and "1 MiB" in problem


@pytest.mark.timeout(10)
def test_an_endless_device_is_refused_not_read(tmp_path):
    assert "not a regular file" in _only_problem(Path("/dev/zero"))


@pytest.mark.timeout(10)
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "plan.yaml"
    os.mkfifo(fifo)
    assert "not a regular file" in _only_problem(fifo)


def test_a_binary_file_is_refused(tmp_path):
    problem = _only_problem(_write(tmp_path, b"\x7fELF\x02\x01\x01\x00\x00\x00" * 50))
    assert problem.startswith("(file): ") and "binary" in problem


def test_a_file_that_is_not_utf8_is_refused_naming_the_byte(tmp_path):
    problem = _only_problem(_write(tmp_path, GOOD_YAML.encode() + "description: café\n".encode("latin-1")))
    assert "UTF-8" in problem and "0xe9" in problem and "line 8" in problem


def test_a_utf8_byte_order_mark_is_accepted(tmp_path):
    assert load_plan(_write(tmp_path, b"\xef\xbb\xbf" + GOOD_YAML.encode())).name == "shop"


def test_deep_nesting_is_refused_with_its_line(tmp_path):
    depth = 100_000
    problem = _only_problem(_write(tmp_path, GOOD_YAML + "description: " + "[" * depth + "]" * depth + "\n"))
    assert "nested" in problem and "line 8" in problem


def test_deep_block_nesting_is_refused(tmp_path):
    lines = "".join(" " * i + f"k{i}:\n" for i in range(200))
    problem = _only_problem(_write(tmp_path, GOOD_YAML + "extra:\n" + lines))
    assert "nested" in problem


def test_billion_laughs_is_refused(tmp_path):
    laughs = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    for level in "bcdefghi":
        previous = chr(ord(level) - 1)
        laughs += f"{level}: &{level} [{', '.join([f'*{previous}'] * 9)}]\n"
    problem = _only_problem(_write(tmp_path, GOOD_YAML + "x:\n" + "".join("  " + line for line in
                                                                          laughs.splitlines(True))))
    assert "alias" in problem


def test_many_aliases_are_refused(tmp_path):
    aliases = "tags: &t [a]\nmore: [" + ", ".join(["*t"] * 500) + "]\n"
    problem = _only_problem(_write(tmp_path, GOOD_YAML + aliases))
    assert "alias" in problem


def test_a_recursive_alias_is_refused(tmp_path):
    problem = _only_problem(_write(tmp_path, GOOD_YAML + "description: &loop [*loop]\n"))
    assert "alias" in problem and "itself" in problem


def test_a_top_level_key_given_twice_is_refused_naming_it_and_its_lines(tmp_path):
    problem = _only_problem(_write(tmp_path, GOOD_YAML + "target:\n  alias: other\n  bootstrap_servers: x:1\n"))
    assert "'target'" in problem and "line 8" in problem and "line 5" in problem


def test_a_nested_key_given_twice_is_refused(tmp_path):
    problem = _only_problem(_write(tmp_path, GOOD_YAML + "sync: {acls: true, acls: false}\n"))
    assert "'acls'" in problem and "line 8" in problem


def test_a_huge_integer_is_a_plan_error_not_a_crash(tmp_path):
    problem = _only_problem(_write(tmp_path, GOOD_YAML + "engine:\n  batch_size: " + "9" * 5000 + "\n"))
    assert problem.startswith(("(file): ", "engine.batch_size: "))


def test_python_object_tags_are_refused(tmp_path):
    problem = _only_problem(_write(tmp_path, GOOD_YAML + "description: !!python/object/apply:os.system [true]\n"))
    assert "line 8" in problem


def test_an_empty_file_is_refused(tmp_path):
    assert "mapping" in _only_problem(_write(tmp_path, ""))


@pytest.mark.parametrize(("field", "text"), [
    ("engine.progress_interval_s", "1e300"),
    ("engine.progress_interval_s", ".inf"),
    ("engine.progress_interval_s", ".nan"),
    ("engine.progress_interval_s", "-1"),
    ("engine.progress_interval_s", "0"),
    ("engine.heartbeat_interval_s", "1.0e+300"),
    ("engine.refresh_interval_s", "-.inf"),
    ("engine.offset_sync_interval_s", "1e9"),
    ("engine.log_interval_s", ".NaN"),
    ("engine.status_interval_s", "1e300"),
    ("engine.transaction_timeout_s", ".nan"),
    ("engine.session_timeout_s", ".inf"),
    ("engine.batch_size", "-5"),
    ("engine.linger_ms", "1e300"),
    ("engine.status_port", "70000"),
    ("cutover.producer_idle_s", ".inf"),
    ("cutover.wait_timeout_s", "1e300"),
    ("cutover.checkpoint_interval_s", "-0.5"),
    ("cutover.max_lag_records", "100000000000000000000000"),
    ("validation.sample_fraction", ".nan"),
])
def test_a_number_out_of_range_names_its_field_and_the_allowed_range(tmp_path, field, text):
    section, name = field.split(".")
    problem = _only_problem(_write(tmp_path, GOOD_YAML + f"{section}:\n  {name}: {text}\n"))
    assert problem.startswith(f"{field}: must be"), problem
    assert " from " in problem and " to " in problem, problem


def test_a_boolean_is_not_a_number_of_seconds(tmp_path):
    problem = _only_problem(_write(tmp_path, GOOD_YAML + "engine:\n  progress_interval_s: true\n"))
    assert problem.startswith("engine.progress_interval_s: must be")


def test_numbers_in_range_load_including_numeric_strings(tmp_path):
    plan = load_plan(_write(tmp_path, GOOD_YAML + "engine:\n  progress_interval_s: 0.5\n  refresh_interval_s: 1e2\n"
                                                  "cutover:\n  max_lag_records: 1000\n"))
    assert plan.engine.progress_interval_s == 0.5
    assert plan.engine.refresh_interval_s == 100.0
    assert plan.cutover.max_lag_records == 1000
