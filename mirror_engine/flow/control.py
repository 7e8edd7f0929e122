"""The control topic of a flow on the target: instructions to the engines that run it, wherever they run.

A compacted topic of JSON records keyed by what they control:
- `flow` with state "running", "paused" or "stopped": every engine of the flow copies, stops fetching
  (keeping its partitions), or stores its progress and releases its partitions (workers leave the
  group) until the flow is started again;
- `topic:<source topic>` with state "switched": the topic's producers moved to the target; no engine of
  the flow copies it again (its target copy has new writers);
- `backfill:<source topic>` with state "pending" and, per partition, the snapshot offset B and the
  target's end when the flow first met the topic: the engine holds those partitions while the Spark
  backfill copies [earliest, B); state "done" once the backfill stored the partitions' progress at B,
  after which the engine copies them from B.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from confluent_kafka import OFFSET_BEGINNING, Message
from pydantic import BaseModel

from mirror_engine.flow.internal_topics import InternalTopics, ensure_internal_topics
from mirror_engine.kafka import (
    InternalTopicReader,
    MalformedRecord,
    admin_client,
    decoded,
    read_to_end,
    write_records,
)
from mirror_engine.plan import MigrationPlan

FLOW_STATES = ("running", "paused", "stopped")
# What people ask for, and the state it sets.
FLOW_ACTIONS = {"start": "running", "resume": "running", "pause": "paused", "stop": "stopped"}


@dataclass(frozen=True)
class BackfillSnapshot:
    """Where the backfill of a topic stops on the source (B) and starts on the target, per partition."""

    topic: str
    state: str  # "pending" or "done"
    partitions: dict[int, tuple[int, int]] = field(default_factory=dict)  # partition -> (B, target start)


class ControlRecord(BaseModel):
    """A control record's value, as read (fields a kind does not use are left at their defaults)."""

    state: str = ""
    partitions: dict[int, tuple[int, int]] = {}  # backfill: partition -> (B, target start)


def _decode(message: Message) -> ControlRecord | None:
    raw = message.value()
    if not (message.key() or b"").decode():
        raise MalformedRecord("a control record without a key")
    return None if raw is None else ControlRecord.model_validate_json(raw)


@dataclass
class ControlChanges:
    switched: set[str] = field(default_factory=set)
    backfilled: set[str] = field(default_factory=set)
    flow_state: str | None = None  # "running", "paused" or "stopped" when it changed


class ControlChannel:
    def __init__(self, plan: MigrationPlan, target_config: dict[str, str]) -> None:
        self.topics = InternalTopics.for_plan(plan)
        self.topic = self.topics.control
        self.target_config = target_config
        self._reader: InternalTopicReader | None = None
        self._next_offset = OFFSET_BEGINNING
        self.switched_topics: set[str] = set()
        self.backfills: dict[str, BackfillSnapshot] = {}
        self.flow_state = "running"

    # ------------------------------------------------------------------ writing
    def _write(self, key: str, value: dict) -> None:
        ensure_internal_topics(admin_client(self.target_config), self.topics)
        write_records(self.target_config, self.topic,
                      [(key.encode(), json.dumps({**value, "at_ms": int(time.time() * 1000)}).encode())],
                      f"the control record {key}")

    def switch_topic(self, topic: str) -> None:
        """Tell the flow's engines to stop copying `topic` for good."""
        self._write(f"topic:{topic}", {"state": "switched"})

    def set_flow_state(self, state: str) -> None:
        """Start, pause or stop every engine of the flow, wherever it runs."""
        if state not in FLOW_STATES:
            raise ValueError(f"flow state must be one of {', '.join(FLOW_STATES)}, got {state!r}")
        self._write("flow", {"state": state})

    def hold_for_backfill(self, topic: str, partitions: dict[int, tuple[int, int]]) -> None:
        """Record the snapshot of a topic whose history the Spark backfill copies."""
        self._write(f"backfill:{topic}", {"state": "pending",
                                          "partitions": {str(p): list(r) for p, r in partitions.items()}})
        self.backfills[topic] = BackfillSnapshot(topic, "pending", dict(partitions))

    def backfill_done(self, snapshot: BackfillSnapshot) -> None:
        self._write(f"backfill:{snapshot.topic}", {
            "state": "done", "partitions": {str(p): list(r) for p, r in snapshot.partitions.items()}})

    # ------------------------------------------------------------------ reading
    def load(self) -> None:
        """Read the whole control topic (at start)."""
        records = read_to_end(self.target_config, self.topic)
        decoded(records, lambda message: self._apply(message, ControlChanges()))  # malformed ones skipped
        if records:
            self._next_offset = records[-1].offset() + 1

    def poll(self) -> ControlChanges:
        """Read control records written since the last call, without waiting."""
        if self._reader is None:
            self._reader = InternalTopicReader(self.target_config, self.topic, "mirror-engine-control",
                                               start={self.topic: self._next_offset})
        changes = ControlChanges()
        decoded(self._reader.available(), lambda message: self._apply(message, changes))  # malformed ones skipped
        return changes

    def _apply(self, message: Message, changes: ControlChanges) -> None:
        """Apply one record; a malformed one raises (before changing anything) and is skipped by the reader."""
        value = _decode(message)
        if value is None:
            return
        kind, _, name = (message.key() or b"").decode().partition(":")
        if kind == "flow" and value.state in FLOW_STATES and value.state != self.flow_state:
            self.flow_state = changes.flow_state = value.state
        elif kind == "topic" and value.state == "switched" and name not in self.switched_topics:
            self.switched_topics.add(name)
            changes.switched.add(name)
        elif kind == "backfill":
            previous = self.backfills.get(name)
            self.backfills[name] = BackfillSnapshot(name, value.state or "pending", dict(value.partitions))
            if value.state == "done" and (previous is None or previous.state != "done"):
                changes.backfilled.add(name)

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
