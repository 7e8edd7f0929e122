"""The cockpit's errors as sentences: what is wrong with a plan's page and what to do, never a server path."""

from __future__ import annotations

import pytest
from airflow.exceptions import AirflowNotFoundException
from kafka_migration.cockpit import views

from mirror_engine.plan import PlanError


def test_a_missing_connection_is_named_with_how_to_define_it():
    error = views.unavailable("shop", AirflowNotFoundException("The conn_id `kafka_dc1` isn't defined"))
    assert str(error).startswith("Plan shop: the Airflow connection 'kafka_dc1' is not defined.")
    assert "AIRFLOW_CONN_KAFKA_DC1" in str(error) and "Exception" not in str(error)


def test_a_broken_plan_names_its_file_but_not_the_plans_folder(tmp_path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("KAFKA_MIGRATION_PLANS", str(tmp_path))
    error = views.unavailable("shop", PlanError(str(tmp_path / "shop.yaml"), ["topics.include: not a list"]))
    assert "shop.yaml" in str(error) and str(tmp_path) not in str(error) and "topics.include" in str(error)


def test_an_unknown_plan_is_a_404_sentence_without_the_plans_folder(tmp_path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("KAFKA_MIGRATION_PLANS", str(tmp_path))
    with pytest.raises(views.PlanUnavailable) as raised:
        views.Views().plan_file("nope")
    assert raised.value.status == 404 and "no migration plan named 'nope'" in str(raised.value)
    assert str(tmp_path) not in str(raised.value)
