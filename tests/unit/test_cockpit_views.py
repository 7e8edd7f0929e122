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


def test_a_plans_way_back_has_pages_of_its_own_reading_the_way_backs_flow(tmp_path, monkeypatch: pytest.MonkeyPatch):
    from kafka_migration.plan_dags import plan_of

    from mirror_engine.failback import FailbackError

    monkeypatch.setenv("KAFKA_MIGRATION_PLANS", str(tmp_path))
    shop = ("name: shop\nsource: {alias: a, bootstrap_servers: 'a:9092'}\n"
            "target: {alias: b, bootstrap_servers: 'b:9092'}\n")
    (tmp_path / "shop.yaml").write_text(shop)
    found = views.Views()
    assert found.plan_file("shop-failback") == f"{tmp_path / 'shop.yaml'}#failback"
    assert found.dag_id("shop-failback") == "kafka_migration_failback__shop"
    assert found.dag_id("shop") == "kafka_migration__shop"
    assert plan_of("kafka_migration_failback__shop") == "shop-failback"  # a run's tab and links find its pages
    # A plan of the folder that happens to end in -failback is itself.
    (tmp_path / "odd.yaml").write_text(shop.replace("name: shop", "name: shop-failback"))
    assert views.Views().plan_file("shop-failback") == str(tmp_path / "odd.yaml")
    error = views.unavailable("shop-failback", FailbackError("plan 'shop' never switched producers"))
    assert error.status == 409 and str(error) == "Plan shop-failback: plan 'shop' never switched producers"
