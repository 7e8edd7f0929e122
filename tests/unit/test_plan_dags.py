"""The plans folder and the DAG ids of a plan are decided once (`kafka_migration.plan_dags`): the DAG file names its
DAGs with it and the cockpit finds the plan of a DAG again with it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kafka_migration.plan_dags import migration_dag_id, plan_of, plans_folder, validation_dag_id

ROOT = Path(__file__).resolve().parents[2]


def test_a_plans_dag_ids_lead_back_to_the_plan():
    assert migration_dag_id("shop") == "kafka_migration__shop"
    assert validation_dag_id("shop") == "kafka_migration_validate__shop"
    assert plan_of(migration_dag_id("shop")) == plan_of(validation_dag_id("shop")) == "shop"
    assert plan_of("kafka_migration_backfill") is None and plan_of("kafka_cluster_smoke") is None


def test_the_plans_folder_is_the_projects_unless_the_environment_names_one(monkeypatch, tmp_path):
    monkeypatch.delenv("KAFKA_MIGRATION_PLANS", raising=False)
    assert plans_folder() == ROOT / "migrations"
    monkeypatch.setenv("KAFKA_MIGRATION_PLANS", str(tmp_path))
    assert plans_folder() == tmp_path


def test_nothing_else_spells_the_dag_prefix_or_the_plans_variable():
    spelled = [path.relative_to(ROOT) for folder in ("dags", "plugins") for path in (ROOT / folder).rglob("*.py")
               if path.name != "plan_dags.py" and ("kafka_migration__" in path.read_text()
                                                  or "kafka_migration_validate__" in path.read_text()
                                                  or 'environ.get("KAFKA_MIGRATION_PLANS"' in path.read_text())]
    assert spelled == []


def _bag_of_a_plan_of_1000_groups(monkeypatch, tmp_path: Path) -> tuple[list[str], Any]:
    """The migration DAG file parsed with one plan, `big`, naming 1,000 groups in `cutover.groups`."""
    import yaml
    from airflow.dag_processing.dagbag import DagBag

    groups = [f"app-{i:04d}" for i in range(1000)]
    (tmp_path / "big.yaml").write_text(yaml.safe_dump({
        "name": "big", "source": {"alias": "src", "bootstrap_servers": "127.0.0.1:1"},
        "target": {"alias": "tgt", "bootstrap_servers": "127.0.0.1:2"}, "topics": {"include": ["orders"]},
        "cutover": {"groups": groups}}))
    monkeypatch.setenv("KAFKA_MIGRATION_PLANS", str(tmp_path))
    bag = DagBag(dag_folder=str(ROOT / "dags" / "migrations.py"))
    return groups, bag


def test_a_plan_of_1000_groups_parses_to_tasks_that_do_not_carry_the_list_and_its_run_switches_them(
        monkeypatch, tmp_path):
    """Airflow copies the DAG's params into each of its tasks at parse time: the plan's groups are left out of them
    (so that parse does not grow with the groups) and read by the run's `groups` task."""
    groups, bag = _bag_of_a_plan_of_1000_groups(monkeypatch, tmp_path)
    assert not bag.import_errors, bag.import_errors
    dag = bag.get_dag(migration_dag_id("big"))
    assert all(task.params.dump().get("groups") is None for task in dag.tasks)
    assert sum(1 for task in dag.tasks if "groups" in task.params) > 10
    assert "1,000 group(s)" in dag.params.get_param("groups").description
    pick = dag.get_task("switch_groups.groups").python_callable
    assert [group for batch in pick(params={"groups": None}) for group in batch] == groups
    assert pick(params={"groups": ["app-0007"]}) == [["app-0007"]] and pick(params={"groups": []}) == []


def test_a_run_of_1000_groups_switches_them_in_a_few_dozen_task_instances(monkeypatch, tmp_path):
    """A task instance costs a process, a parse of the DAG file and its own clients: the switch_groups stage maps
    one task over batches of groups (every group in exactly one, in order), not tasks per group (it mapped three
    per group over the groups: a fence task even when the run does not fence, the wait, the switch)."""
    from airflow.sdk.definitions.mappedoperator import MappedOperator

    groups, bag = _bag_of_a_plan_of_1000_groups(monkeypatch, tmp_path)
    dag = bag.get_dag(migration_dag_id("big"))
    stage = [task for task in dag.tasks if task.task_id.startswith("switch_groups.")]
    mapped = [task for task in stage if isinstance(task, MappedOperator)]
    pick = dag.get_task("switch_groups.groups").python_callable

    for params, batches_at_most in (({"groups": None}, 40), ({"groups": None, "groups_per_task": 100}, 10),
                                    ({"groups": groups[:10]}, 4), ({"groups": groups[:1]}, 1)):
        batches = pick(params=params)  # what the stage's mapped tasks expand over
        instances = len(stage) - len(mapped) + len(mapped) * len(batches)
        assert instances <= 1 + batches_at_most, (params, [task.task_id for task in stage], len(batches))
        assert [group for batch in batches for group in batch] == (params["groups"] or groups)


def test_an_mm2_file_in_the_plans_folder_gets_a_migration_dag_for_each_flow_it_enables(monkeypatch, tmp_path):
    """Every task of a flow's DAG names the same flow again (`mm2.properties#a->b`); a broken MM2 file costs only its
    own DAG, named after it, and the YAML plans beside it keep theirs; the cockpit finds each flow by its name."""
    from airflow.dag_processing.dagbag import DagBag
    from kafka_migration.cockpit.views import Views

    from mirror_engine.mm2 import PlanReference

    (tmp_path / "mm2.properties").write_text("clusters = a, b\na.bootstrap.servers = 127.0.0.1:1\n"
                                             "b.bootstrap.servers = 127.0.0.1:2\na->b.enabled = true\n"
                                             "b->a.enabled = true\ntopics = orders.*\n")
    (tmp_path / "looping.properties").write_text(
        (tmp_path / "mm2.properties").read_text()
        + "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n")
    (tmp_path / "shop.yaml").write_text("name: shop\nsource: {alias: src, bootstrap_servers: '127.0.0.1:3'}\n"
                                        "target: {alias: tgt, bootstrap_servers: '127.0.0.1:4'}\n")
    monkeypatch.setenv("KAFKA_MIGRATION_PLANS", str(tmp_path))
    bag = DagBag(dag_folder=str(ROOT / "dags" / "migrations.py"))
    assert not bag.import_errors, bag.import_errors
    for name, flow in (("a-to-b", "a->b"), ("b-to-a", "b->a")):
        for dag_id in (migration_dag_id(name), validation_dag_id(name)):
            paths = {task.plan_path for task in bag.get_dag(dag_id).tasks if hasattr(task, "plan_path")}
            assert paths == {f"{tmp_path / 'mm2.properties'}#{flow}"}, (dag_id, paths)
            assert PlanReference.parse(paths.pop()).load().name == name
    assert bag.get_dag(migration_dag_id("shop")) is not None
    broken = bag.get_dag(migration_dag_id("looping"))
    assert "these flows make a loop" in broken.doc_md
    choices = bag.get_dag("kafka_migration_backfill").params.get_param("plan").schema["enum"]
    assert f"{tmp_path / 'mm2.properties'}#b->a" in choices and str(tmp_path / "shop.yaml") in choices
    views = Views().plan_files()
    assert views["a-to-b"] == f"{tmp_path / 'mm2.properties'}#a->b" and views["shop"] == str(tmp_path / "shop.yaml")
    assert views["looping"] == str(tmp_path / "looping.properties")


def test_a_plan_reference_names_a_yaml_plan_or_an_mm2_files_flow_and_its_command_options(tmp_path):
    from mirror_engine.mm2 import PlanReference

    yaml_plan, flow = PlanReference.parse("plans/shop.yaml"), PlanReference.parse("plans/mm2.properties#a->b")
    assert (yaml_plan.path, yaml_plan.flow, str(yaml_plan)) == (Path("plans/shop.yaml"), None, "plans/shop.yaml")
    assert (flow.path, flow.flow, str(flow)) == (Path("plans/mm2.properties"), "a->b", "plans/mm2.properties#a->b")
    assert PlanReference.parse("plans/odd#name.yaml").flow is None  # only an MM2 file has flows
    assert yaml_plan.cli_arguments() == ["--plan", str(Path("plans/shop.yaml").resolve())]
    assert flow.cli_arguments() == ["--mm2-config", str(Path("plans/mm2.properties").resolve()), "--flow", "a->b"]
    assert PlanReference.parse("plans/mm2.properties").cli_arguments()[2:] == []  # the file's one flow


def test_a_plan_reference_names_the_way_back_of_a_plan_and_passes_it_on_to_the_command():
    from mirror_engine.mm2 import PlanReference

    yaml_back = PlanReference.parse("plans/shop.yaml#failback")
    flow_back = PlanReference.parse("plans/mm2.properties#a->b#failback")
    assert (yaml_back.path, yaml_back.flow, yaml_back.failback) == (Path("plans/shop.yaml"), None, True)
    assert (flow_back.path, flow_back.flow, flow_back.failback) == (Path("plans/mm2.properties"), "a->b", True)
    assert str(flow_back) == "plans/mm2.properties#a->b#failback"
    assert PlanReference.parse("plans/shop.yaml").way_back() == yaml_back
    assert yaml_back.cli_arguments()[-1] == "--failback" and flow_back.cli_arguments()[-3:] == ["--flow", "a->b",
                                                                                              "--failback"]
    assert not PlanReference.parse("plans/mm2.properties#a->b").failback
