"""A run's params are read in one place (`kafka_migration.params`): typed as the migration DAG renders them
(natively), or as the text of a template field given by hand."""

from __future__ import annotations

import pytest


def test_a_flag_is_a_bool_or_its_text():
    from kafka_migration.params import flag

    assert flag(True) is True and flag(False) is False
    assert flag("true") is True and flag(" True ") is True and flag("false") is False and flag("None") is False


@pytest.mark.parametrize(("value", "expected"), [(None, None), ("", None), ("None", None), ("null", None),
                                                 (0, 0.0), (2.5, 2.5), ("300", 300.0), (" 1.5 ", 1.5)])
def test_seconds_are_a_number_or_none_for_an_empty_one(value, expected):
    from kafka_migration.params import seconds, whole

    assert seconds(value) == expected
    assert whole(value) == (None if expected is None else int(expected))


def test_the_migration_dag_renders_its_params_as_their_own_types(tmp_path, monkeypatch):
    import shutil
    from pathlib import Path

    monkeypatch.setenv("KAFKA_MIGRATION_PLANS", str(tmp_path))
    shutil.copy(Path(__file__).resolve().parents[2] / "migrations" / "demo.yaml", tmp_path / "demo.yaml")
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(Path(__file__).resolve().parents[2] / "dags"))
    dag = bag.get_dag("kafka_migration__demo")
    assert dag.render_template_as_native_obj is True
    assert dag.params["producer_topics"] == ["orders", "payments"]  # the plan's cutover.producer_topics
