"""Before anyone approves a switch, the run says what will happen to each group, on real clusters: the checkpoints
stage fails at once on a group that can only fail, naming it and why; a group with nothing committed and no
consumers is named as skipped and does not hold the stage; the approval is not offered while a group is blocked."""

from __future__ import annotations

import threading
import time

import pytest
import yaml
from confluent_kafka.admin import NewTopic

from mirror_engine.cutover import BLOCKED, SKIP, SWITCH, build_check, read_switch_outlook
from mirror_engine.plan import plan_from_dict
from mirror_engine.replication import Replicator
from tests.integration.kafka_data import produce
from tests.integration.plans import create_topics, plan_dict
from tests.integration.test_cutover_retries import _read_and_commit

pytestmark = pytest.mark.integration

NOW = int(time.time() * 1000)


def test_a_blocked_group_fails_the_checks_before_the_approval_and_an_empty_one_is_skipped(kafka_pair, unique_name,
                                                                                         tmp_path):
    from airflow.sdk.exceptions import AirflowFailException
    from kafka_migration.operators.approval import SwitchApprovalOperator

    source, target = kafka_pair
    topic, audit = f"{unique_name}-orders", f"{unique_name}-audit"  # the plan copies `topic` only
    stopped, empty, blocked = f"{unique_name}-stopped", f"{unique_name}-empty", f"{unique_name}-blocked"
    create_topics(source, [NewTopic(topic, 2, 1), NewTopic(audit, 1, 1)])
    produce(source, topic, [(i % 2, b"k", f"v{i}".encode(), None, NOW + i) for i in range(200)])
    produce(source, audit, [(0, b"k", b"v", None, NOW)])
    _read_and_commit(source.client_config(), stopped, topic, 50)
    _read_and_commit(source.client_config(), blocked, audit, 1)
    data = plan_dict(source, target, topic, name=f"outlook{unique_name[-8:]}",
                     cutover={"groups": [stopped, empty, blocked]})
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(data))
    plan = plan_from_dict(data)
    replicator = Replicator(plan, source.client_config(), target.client_config())
    runner = threading.Thread(target=replicator.run, kwargs={"max_seconds": 120}, daemon=True)
    runner.start()
    try:
        verdicts = {o.group: o.verdict for o in read_switch_outlook(plan, source.client_config(),
                                                                    target.client_config(), plan.cutover.groups)}
        assert verdicts == {stopped: SWITCH, empty: SKIP, blocked: BLOCKED}, verdicts

        def checkpoints(groups: list[str] | None) -> object:
            check = build_check("checkpoints_current", plan, source.client_config(), target.client_config(),
                                {} if groups is None else {"groups": groups})
            deadline = time.monotonic() + 60
            try:
                while True:
                    readiness = check.check()
                    if readiness.done or readiness.failed or time.monotonic() > deadline:
                        return readiness
                    time.sleep(0.5)
            finally:
                check.close()

        refused = checkpoints(None)  # the plan's groups: one of them can only fail
        assert refused.failed and f"{blocked} (reads topics this plan does not copy: {audit})" in refused.failed
        assert stopped not in refused.failed and empty not in refused.failed
        current = checkpoints([stopped, empty])  # the run leaves the blocked one out
        assert current.done and not current.failed, current
        assert f"nothing to switch, skipped: {empty}" in current.progress and current.detail["skipped"] == [empty]

        approval = SwitchApprovalOperator(task_id="switch", plan_path=str(plan_file), required=True)
        with pytest.raises(AirflowFailException) as no_approval:
            approval._summary({"params": {"groups": [stopped, blocked]}})
        assert f"no approval asked: the switch would fail for group {blocked}" in str(no_approval.value)
        summary = approval._summary({"params": {"groups": [stopped, empty], "producer_topics": []}})
        assert f"1 group(s) skipped: {empty} (nothing committed on the source" in summary, summary
        assert f"1 group(s) to switch: {stopped} (stopped on the source" in summary, summary
    finally:
        replicator.stop()
        runner.join(60)
