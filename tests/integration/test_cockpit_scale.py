"""The cockpit's migration page of a plan with many partitions, in Debian's chromium: one page of rows, whatever
the plan's size, and a summary that says what the engine's own status says.

The cockpit's app is served by uvicorn with Airflow's login taken as given (`get_user` overridden): the pages
are what is checked here, the login is checked with the real api-server in `test_airflow_scheduler.py`."""

from __future__ import annotations

import re
import threading
import time

import pytest
import yaml
from confluent_kafka.admin import NewTopic

from tests.integration.airflow_services import CHROMIUM
from tests.integration.kafka_data import produce
from tests.integration.plans import create_topics, plan_dict

pytestmark = [pytest.mark.integration, pytest.mark.airflow]

TOPICS, PARTITIONS = 30, 10  # 300 partitions


@pytest.fixture
def cockpit(airflow_db, monkeypatch, tmp_path):
    """The cockpit app on a loopback port, its plans folder `tmp_path / plans`: yields its base URL."""
    import socket

    import uvicorn
    from airflow.api_fastapi.core_api.security import get_user
    from fastapi import FastAPI

    plans = tmp_path / "plans"
    plans.mkdir()
    monkeypatch.setenv("KAFKA_MIGRATION_PLANS", str(plans))
    from kafka_migration.cockpit.app import app
    from kafka_migration.cockpit.links import PREFIX

    app.dependency_overrides[get_user] = lambda: None
    root = FastAPI()
    root.mount(PREFIX.rstrip("/"), app)  # where Airflow's api-server mounts it: the pages' links lead there
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(root, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "the cockpit did not start"
        time.sleep(0.1)
    try:
        yield f"http://127.0.0.1:{port}{PREFIX}", plans
    finally:
        server.should_exit = True
        thread.join(30)
        app.dependency_overrides.clear()


def test_a_plan_of_300_partitions_shows_one_page_of_them_and_the_summary_of_the_engines_status(
        kafka_pair, cockpit, unique_name):
    from playwright.sync_api import sync_playwright

    from mirror_engine.observe import is_live, partition_count, read_worker_statuses
    from mirror_engine.plan import plan_from_dict
    from mirror_engine.replication import Replicator

    source, target = kafka_pair
    url, plans = cockpit
    names = [f"{unique_name}-{i:02d}" for i in range(TOPICS)]
    create_topics(source, [NewTopic(name, PARTITIONS, 1) for name in names])
    now_ms = int(time.time() * 1000)
    for topic in names:
        produce(source, topic, [(p, b"k", b"v", None, now_ms) for p in range(PARTITIONS) for _ in range(3)])
    name = f"cockpitscale{unique_name[-8:]}"
    data = plan_dict(source, target, unique_name, name=name, engine={"status_interval_s": 1})
    (plans / f"{name}.yaml").write_text(yaml.safe_dump(data))
    plan = plan_from_dict(data)
    engine = Replicator(plan, source.client_config(), target.client_config())
    runner = threading.Thread(target=engine.run, kwargs={"max_seconds": 240}, daemon=True)
    runner.start()
    try:
        deadline = time.monotonic() + 120
        while True:  # the engine copies all 300 partitions and says so in its status
            live = [s for s in read_worker_statuses(plan, target.client_config(), window_s=60) if is_live(s)]
            if live and sum(partition_count(s) for s in live) == TOPICS * PARTITIONS and live[-1]["lag"] == 0:
                break
            assert time.monotonic() < deadline, f"the engine did not copy every partition: {live}"
            time.sleep(1)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            try:
                page = browser.new_page()
                page.goto(f"{url}plans/{name}", wait_until="networkidle")
                assert page.locator("#partitions").count() == 1, page.locator("main").inner_text()
                rows = page.locator("#partitions table tr")
                assert 1 < rows.count() <= 51, rows.count()  # a header and at most one page of 50
                pager = page.locator("#partitions .pager").inner_text()
                assert f"page 1 of 6 ({TOPICS * PARTITIONS} partitions)" in pager, pager
                cards = page.locator("#totals").inner_text()
                assert re.search(r"live engines\s*1\b", cards) and re.search(r"lag\s*0 records", cards), cards
                assert re.search(r"stopped partitions\s*0\b", cards), cards
                # Page 2 through its link: the next 50, none of page 1's.
                first = set(rows.all_inner_texts()[1:])
                page.get_by_role("link", name="next").click()
                page.wait_for_load_state("networkidle")
                assert "page 2 of 6" in page.locator("#partitions .pager").inner_text()
                second = page.locator("#partitions table tr").all_inner_texts()[1:]
                assert len(second) == 50 and not first & set(second)
                # A filter by name: one topic's ten partitions.
                page.fill("input[name=q]", names[7])
                page.get_by_role("button", name="filter").click()
                page.wait_for_load_state("networkidle")
                assert page.locator("#partitions table tr").count() == PARTITIONS + 1
            finally:
                browser.close()
    finally:
        engine.stop()
        runner.join(60)
