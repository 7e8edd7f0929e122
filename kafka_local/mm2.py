"""MirrorMaker 2 in dedicated mode beside the local clusters, to compare the engine with it on the same machine.

`start_mirror_maker` writes an `mm2.properties` for one flow `source -> target` (identity replication policy,
offset-syncs on the target, group offset sync on, replication factor 1 for the data and every internal topic
since the local clusters have one broker), starts `org.apache.kafka.connect.mirror.MirrorMaker --clusters
<target>` from the jar set the brokers use, and returns once it logged that it started. Only the herder
writing into the target runs: without `--clusters` MM2 also starts a target->source herder that writes
heartbeats into the source.

Its folder (`workdir`) holds `mm2.properties`, `log4j2.properties` and `mm2.log`. The JVM is the process we
start, so `stop()` can collect its exact CPU time from the kernel (`os.wait4`) and its peak RSS (`VmHWM`).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from kafka_local.cluster import SECURED_USERS, SUPER_USER, KafkaCluster
from kafka_local.java import log_excerpt
from kafka_local.maven import classpath, kafka_jar_set, resolve
from kafka_local.tls import java_tls_settings

log = logging.getLogger(__name__)

MAIN_CLASS = "org.apache.kafka.connect.mirror.MirrorMaker"
STARTED_LINE = "Kafka MirrorMaker started"
STARTUP_TIMEOUT_S = 120.0
# As bin/connect-mirror-maker.sh and kafka-run-class.sh start it, so memory figures are those of a stock MM2.
JVM_OPTIONS = ("-Xms256m", "-Xmx2g", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
               "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent")

# MM2 logs every client's full configuration at INFO: keep its own lines (start, stop, task errors) and warnings.
_LOG4J2 = """\
status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = {log_file}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = warn
rootLogger.appenderRef.file.ref = FILE
logger.mirror.name = org.apache.kafka.connect.mirror
logger.mirror.level = info
"""


class MirrorMakerError(RuntimeError):
    """MirrorMaker 2 did not start or stopped on its own; the message carries the tail of its log."""


@dataclass(frozen=True)
class ProcessUsage:
    """What the kernel accounted to a finished child: CPU (user + system) and peak resident set size."""

    cpu_s: float
    max_rss_bytes: int
    returncode: int


@dataclass(frozen=True)
class MirrorMakerSettings:
    """One flow's MM2 settings. Intervals default to MM2's own defaults (seconds)."""

    topics: str = ".*"  # MM2 `topics`: regexes, comma-separated, full match
    groups: str = ".*"
    tasks_max: int = 1
    source_alias: str = "src"
    target_alias: str = "tgt"
    refresh_topics_interval_s: int = 600
    refresh_groups_interval_s: int = 600
    sync_group_offsets_interval_s: int = 60
    emit_checkpoints_interval_s: int = 60
    sync_topic_acls: bool = True
    producer: dict[str, str] = field(default_factory=dict)  # the target's producer (`<target>.producer.*`)
    consumer: dict[str, str] = field(default_factory=dict)  # the source's consumer (`<source>.consumer.*`)
    extra: dict[str, str] = field(default_factory=dict)  # any other MM2 properties; they win


def _java_client_settings(cluster: KafkaCluster, user: str) -> dict[str, str]:
    """Java client settings to reach `cluster` (the harness's SASL PLAIN users when it is secured; JKS stores,
    SCRAM or OIDC client credentials on a TLS cluster, as MirrorMaker 2 users write them)."""
    settings = {"bootstrap.servers": cluster.bootstrap}
    if cluster.tls:
        return {**settings, **java_tls_settings(cluster.tls, cluster.tls_files, user, SECURED_USERS[user],
                                                cluster.oauth_issuer)}
    if cluster.secured:
        settings.update({
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required "
                                f'username="{user}" password="{SECURED_USERS[user]}";',
        })
    return settings


def mm2_properties(source: KafkaCluster, target: KafkaCluster, settings: MirrorMakerSettings,
                   user: str = SUPER_USER) -> dict[str, str]:
    """The properties of one flow source->target, as MM2's dedicated mode reads them."""
    src, tgt = settings.source_alias, settings.target_alias
    flow = f"{src}->{tgt}"
    props: dict[str, str] = {
        "clusters": f"{src}, {tgt}",
        f"{flow}.enabled": "true",
        f"{flow}.topics": settings.topics,
        f"{flow}.groups": settings.groups,
        "tasks.max": str(settings.tasks_max),
        "replication.policy.class": "org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
        "offset-syncs.topic.location": "target",
        "sync.group.offsets.enabled": "true",
        "sync.topic.acls.enabled": str(settings.sync_topic_acls).lower(),
        "refresh.topics.interval.seconds": str(settings.refresh_topics_interval_s),
        "refresh.groups.interval.seconds": str(settings.refresh_groups_interval_s),
        "sync.group.offsets.interval.seconds": str(settings.sync_group_offsets_interval_s),
        "emit.checkpoints.interval.seconds": str(settings.emit_checkpoints_interval_s),
        # One broker per cluster: every topic MM2 creates needs replication factor 1 (its defaults are 2 and 3).
        "replication.factor": "1",
        "offset-syncs.topic.replication.factor": "1",
        "checkpoints.topic.replication.factor": "1",
        "heartbeats.topic.replication.factor": "1",
        "config.storage.replication.factor": "1",
        "offset.storage.replication.factor": "1",
        "status.storage.replication.factor": "1",
        # Finding plugins through their ServiceLoader manifests instead of scanning every jar: start-up
        # in about 1.5 s instead of about 15 s. MM2 reads it at the top level and per herder.
        "plugin.discovery": "service_load",
        f"{src}.plugin.discovery": "service_load",
        f"{tgt}.plugin.discovery": "service_load",
    }
    for alias, cluster in ((src, source), (tgt, target)):
        props.update({f"{alias}.{key}": value for key, value in _java_client_settings(cluster, user).items()})
    props.update({f"{tgt}.producer.{key}": value for key, value in settings.producer.items()})
    props.update({f"{src}.consumer.{key}": value for key, value in settings.consumer.items()})
    props.update(settings.extra)
    return props


def _escape(text: str, key: bool = False) -> str:
    """java.util.Properties escaping: backslashes (as in regexes) and, in keys, the separators."""
    text = text.replace("\\", "\\\\").replace("\n", "\\n")
    if key:
        for char in "=: ":
            text = text.replace(char, "\\" + char)
    return text


def render_properties(props: dict[str, str]) -> str:
    return "".join(f"{_escape(key, key=True)}={_escape(value)}\n" for key, value in props.items())


class MirrorMakerProcess:
    """A running dedicated-mode MM2 (one JVM, our child)."""

    def __init__(self, process: subprocess.Popen[bytes], workdir: Path, settings: MirrorMakerSettings,
                 target: KafkaCluster) -> None:
        self.process = process
        self.workdir = workdir
        self.settings = settings
        self.target = target
        self.started_at = time.monotonic()  # when the JVM was launched
        self.usage: ProcessUsage | None = None

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def log_file(self) -> Path:
        return self.workdir / "mm2.log"

    @property
    def properties_file(self) -> Path:
        return self.workdir / "mm2.properties"

    def is_running(self) -> bool:
        return self.usage is None and exit_code(self.process) is None

    def log_tail(self, lines: int = 40) -> str:  # its errors, then its last lines
        return log_excerpt(self.log_file, lines)

    def check_alive(self) -> None:
        if not self.is_running():
            code = self.stop(timeout_s=5).returncode  # reaps it, so no zombie is left behind
            raise MirrorMakerError(f"MirrorMaker 2 (pid {self.pid}) exited with {code}; "
                                   f"log {self.log_file}:\n{self.log_tail()}")

    def wait_started(self, timeout_s: float = STARTUP_TIMEOUT_S) -> float:
        """Wait for MM2's "started" log line; return the seconds since launch."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self.check_alive()
            if self.log_file.exists() and STARTED_LINE in self.log_file.read_text(errors="replace"):
                return time.monotonic() - self.started_at
            time.sleep(0.2)
        self.stop()
        raise MirrorMakerError(f"MirrorMaker 2 did not log '{STARTED_LINE}' within {timeout_s:.0f} s; "
                               f"log {self.log_file}:\n{self.log_tail()}")

    def wait_until_copied(self, topics: Iterable[str], records: int, timeout_s: float = 600.0) -> float:
        """Wait until the target topics (identity names) hold `records` records; return seconds since launch."""
        reached = wait_for_records(self.target, topics, records, timeout_s, alive=self.check_alive)
        return reached - self.started_at

    def stop(self, timeout_s: float = 60.0) -> ProcessUsage:
        """SIGTERM (MM2 stops its herders cleanly), SIGKILL after `timeout_s`; the kernel's account of the JVM."""
        if self.usage is None:
            self.usage = stop_process(self.process, timeout_s)
        return self.usage


def start_mirror_maker(source: KafkaCluster, target: KafkaCluster, workdir: Path,
                       settings: MirrorMakerSettings | None = None, *, user: str = SUPER_USER,
                       wait: bool = True) -> MirrorMakerProcess:
    """Start MM2 for the flow source->target in `workdir`; by default return once it reports started."""
    settings = settings or MirrorMakerSettings()
    lib = resolve(kafka_jar_set())
    workdir = workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    properties = workdir / "mm2.properties"
    properties.write_text(render_properties(mm2_properties(source, target, settings, user)))
    log_file = workdir / "mm2.log"
    log_file.unlink(missing_ok=True)
    (workdir / "log4j2.properties").write_text(_LOG4J2.format(log_file=log_file))
    command = [
        "java", *JVM_OPTIONS,
        f"-Dlog4j2.configurationFile={workdir / 'log4j2.properties'}",
        # The file goes first: `--clusters` takes every argument after it.
        "-cp", classpath(lib), MAIN_CLASS, str(properties), "--clusters", settings.target_alias,
    ]
    with open(workdir / "mm2.out", "wb") as out:  # anything printed outside log4j (JVM errors)
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   start_new_session=True)  # Ctrl-C in a test run does not reach it
    mirror_maker = MirrorMakerProcess(process, workdir, settings, target)
    log.info("MirrorMaker 2 %s->%s started as pid %d in %s", settings.source_alias, settings.target_alias,
             process.pid, workdir)
    if wait:
        took = mirror_maker.wait_started()
        log.info("MirrorMaker 2 reported started after %.1f s", took)
    return mirror_maker


def exit_code(process: subprocess.Popen[bytes]) -> int | None:
    """The child's exit code once it exited, else None, without reaping it (Popen.poll() would, and the
    kernel's account of its resources would go with it)."""
    if process.returncode is not None:
        return process.returncode
    result = os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    if result is None:
        return None
    return result.si_status if result.si_code == os.CLD_EXITED else -result.si_status


def peak_rss_bytes(pid: int) -> int:
    """The largest resident set the process has had since it exec'd (its `VmHWM`); 0 once it has exited.

    wait4's `ru_maxrss` cannot serve here: Linux keeps the high-water mark of the memory a child had before
    its exec, and a forked child starts with its parent's resident pages, so a benchmark holding its data
    set in memory would be charged for it in every process it starts.
    """
    return memory_bytes(pid, "VmHWM")


def memory_bytes(pid: int, field: str) -> int:
    """A memory line of the process's /proc status (`VmRSS`, `VmHWM`, ...) in bytes; 0 once it has exited."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(f"{field}:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0  # a zombie's status has no memory lines


def stop_process(process: subprocess.Popen[bytes], timeout_s: float = 60.0) -> ProcessUsage:
    """SIGTERM a child, SIGKILL it after `timeout_s`, reap it with wait4: its CPU seconds and peak RSS.

    The CPU time is wait4's, exact for the child and every descendant it reaped. The peak RSS is the child's
    own `VmHWM`, read until it exits (its shutdown included, unless it exits between two reads).
    """
    pid = process.pid
    if process.returncode is not None:
        raise RuntimeError(f"pid {pid} was already reaped: its resource usage is gone")
    peak_rss = peak_rss_bytes(pid)
    os.kill(pid, signal.SIGTERM)  # a child that exited on its own stays a zombie until reaped: no error
    deadline = time.monotonic() + timeout_s
    while True:
        peak_rss = max(peak_rss, peak_rss_bytes(pid))
        reaped, status, usage = os.wait4(pid, os.WNOHANG)
        if reaped == pid:
            break
        if time.monotonic() > deadline:
            log.warning("pid %d did not stop within %.0f s of SIGTERM: killing it", pid, timeout_s)
            os.kill(pid, signal.SIGKILL)
            _, status, usage = os.wait4(pid, 0)
            break
        time.sleep(0.1)
    process.returncode = os.waitstatus_to_exitcode(status)
    return ProcessUsage(usage.ru_utime + usage.ru_stime, peak_rss, process.returncode)


def count_records(admin: AdminClient, topics: Iterable[str]) -> int:
    """Records in the topics (end offset minus start offset, summed); topics that do not exist count 0."""
    wanted = set(topics)
    # All topics at once: asking metadata for one missing topic could auto-create it on some brokers.
    metadata = admin.list_topics(timeout=10).topics
    partitions = [TopicPartition(name, p) for name in sorted(wanted & metadata.keys())
                  for p in metadata[name].partitions]
    if not partitions:
        return 0
    ends = admin.list_offsets({tp: OffsetSpec.latest() for tp in partitions}, request_timeout=10)
    starts = admin.list_offsets({tp: OffsetSpec.earliest() for tp in partitions}, request_timeout=10)
    return sum(ends[tp].result().offset - starts[tp].result().offset for tp in partitions)


def wait_for_records(cluster: KafkaCluster, topics: Iterable[str], records: int, timeout_s: float,
                     alive: Callable[[], None] | None = None, poll_s: float = 0.2) -> float:
    """Wait until `topics` on `cluster` hold at least `records` records; return the monotonic time seen.

    `alive` is called between polls and should raise when the writer being waited for has died.
    """
    names = list(topics)
    # Quiet: the benchmarks stop clusters while such clients may still wait to be collected.
    admin = AdminClient({**cluster.client_config(), "log_level": 0})
    deadline = time.monotonic() + timeout_s
    held = 0
    while time.monotonic() < deadline:
        try:
            held = count_records(admin, names)
        except KafkaException as error:  # a topic being created: leaders not elected yet
            log.debug("counting records: %s", error)
        now = time.monotonic()
        if held >= records:
            return now
        if alive is not None:
            alive()
        time.sleep(poll_s)
    raise TimeoutError(f"{cluster.name}: {held} of {records} records in {', '.join(names)} after {timeout_s:.0f} s")
