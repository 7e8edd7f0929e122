"""Switching a topic's producers to the target: once the topic can switch (`TopicReadyToSwitch`, the check its
sensor defers on: idle on the source, its writes fenced when asked, copied to its end), the flow's control topic
records it switched and every engine of the flow stops copying it."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass

from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from mirror_engine.cutover.ready_to_switch import TopicReadyToSwitch
from mirror_engine.cutover.switched import stored_report
from mirror_engine.cutover.waiting import SwitchError, wait_until_ready
from mirror_engine.flow import ControlChannel, FlowMapping
from mirror_engine.kafka import (
    FENCE_OPTION,
    admin_client,
    list_offsets,
    place_fence,
    remove_fence,
    topic_write_fence,
)
from mirror_engine.observe import ReportStore
from mirror_engine.plan import MigrationPlan


@dataclass
class ProducerSwitchReport:
    topic: str
    target_topic: str
    fenced: bool
    wait_idle_s: float
    wait_drain_s: float
    end_offsets: dict[int, int]  # source end offset per partition at the switch
    copied: dict[int, int]  # the engine's copied position per partition, equal to the end offsets

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    def render(self) -> str:
        rows = "\n".join(f"  {self.topic}[{p}]: source end {end}, copied {self.copied.get(p)}"
                         for p, end in sorted(self.end_offsets.items()))
        return (f"producers of {self.topic} can switch to {self.target_topic} on the target"
                f"{' (writes on the source are fenced)' if self.fenced else ''}: the source was idle after "
                f"{self.wait_idle_s:.1f} s and fully copied {self.wait_drain_s:.1f} s later; the engine no longer "
                f"copies it\n{rows}")


def switch_producers(plan: MigrationPlan, source_config: dict[str, str], target_config: dict[str, str], topic: str,
                     *, fence: bool = False, idle_s: float | None = None, timeout_s: float | None = None,
                     fence_option: str = FENCE_OPTION) -> ProducerSwitchReport:
    """Wait until nothing more is written to `topic` on the source for `idle_s` (after fencing writes, with `fence`)
    and the engine copied it to its end (`TopicReadyToSwitch`), then tell the engines to stop copying the topic so
    that producers may write to the target."""
    if not plan.replicates_topic(topic):
        raise SwitchError(f"topic {topic!r} is not copied by plan '{plan.name}': nothing was changed")
    timeout = timeout_s or plan.cutover.wait_timeout_s
    idle = plan.cutover.producer_idle_s if idle_s is None else idle_s
    source_admin = admin_client(source_config)
    metadata = source_admin.list_topics(topic, timeout=15).topics.get(topic)
    if metadata is None or metadata.error is not None:
        raise SwitchError(f"topic {topic!r} does not exist on the source")
    partitions = [TopicPartition(topic, p) for p in sorted(metadata.partitions)]
    control = ControlChannel(plan, target_config)
    try:
        control.load()
    finally:
        control.close()
    if topic in control.switched_topics:  # a retried or cleared switch: prove it, change nothing
        return _producers_already_switched(plan, source_admin, target_config, topic, partitions)
    if fence:
        problem = place_fence(source_admin, topic_write_fence(topic), plan.source.alias, f"topic '{topic}'",
                              fence_option)
        if problem:
            raise SwitchError(problem)
    started = time.monotonic()
    ready = TopicReadyToSwitch(plan, source_config, target_config, topic, idle_s=idle, fence=fence)
    try:
        wait_until_ready(ready, timeout, outcome="the engines still copy it", hint="stop its producers on the "
                         "source, or fence its writes")
    finally:
        ready.close()
    done_at = time.monotonic()
    idle_at = ready.idle_at or done_at
    ends = {p: end for (_t, p), end in (ready.ends or {}).items()}
    ControlChannel(plan, target_config).switch_topic(topic)
    report = ProducerSwitchReport(topic, plan.policy().format_remote_topic(plan.source.alias, topic), fence,
                                  idle_at - started, done_at - idle_at, ends, {p: ready.copied[p] for p in ends})
    ReportStore(plan, target_config).put("producer-switch", topic, json.loads(report.to_json()))
    return report


def _producers_already_switched(plan: MigrationPlan, source_admin: AdminClient, target_config: dict[str, str],
                                topic: str, partitions: list[TopicPartition]) -> ProducerSwitchReport:
    """The report of a producer switch recorded before, once the source is seen to hold nothing the engines did
    not copy before they stopped; SwitchError naming what it holds otherwise."""
    ends = {p: end for (_t, p), end in list_offsets(source_admin, partitions, OffsetSpec.latest()).items()}
    with FlowMapping(plan, target_config) as mapping:
        mapping.refresh()
        copied = {p: int(mapping.copied_position(topic, p) or 0) for p in ends}
    behind = {p: (copied[p], end) for p, end in sorted(ends.items()) if copied[p] < end}
    if behind:
        raise SwitchError(
            f"topic {topic} was switched to the target before (the engines no longer copy it), but the source "
            f"holds {sum(end - c for c, end in behind.values()):,} record(s) written after the copy stopped ("
            + ", ".join(f"{topic}[{p}] copied to {c:,} of {end:,}" for p, (c, end) in behind.items())
            + "): a producer still writes to the source; move it to the target, and copy those records by hand "
              "if they are needed. Nothing was changed")
    stored = stored_report(plan, target_config, "producer-switch", topic)
    if stored is not None and stored.get("end_offsets") == {str(p): e for p, e in ends.items()}:
        fields = {k: v for k, v in stored.items() if k in ProducerSwitchReport.__dataclass_fields__}
        return ProducerSwitchReport(**{**fields, "end_offsets": ends, "copied": copied})
    # Stopped after the switch was recorded and before its report was: store it now.
    report = ProducerSwitchReport(topic, plan.policy().format_remote_topic(plan.source.alias, topic), False, 0.0,
                                  0.0, ends, copied)
    ReportStore(plan, target_config).put("producer-switch", topic, json.loads(report.to_json()))
    return report


def unfence_producers(source_config: dict[str, str], topic: str) -> bool:
    """Remove the topic's write fence where one is in force (True if one was)."""
    return remove_fence(admin_client(source_config), topic_write_fence(topic))
