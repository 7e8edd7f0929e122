"""A flow's reports (validations, group switches, producer switches), stored on the target cluster.

Reports are read by whoever shows a migration (the Airflow cockpit, the CLI), which in a real deployment
runs on another machine than the task that wrote them: so they live beside the flow's control and status
topics, in a compacted topic of JSON records keyed `<kind>:<name>`, not in a worker's files. Each record
is bounded (`MAX_REPORT_BYTES`: the largest lists are cut, and the record says which), and only the newest
`KEEP_PER_KIND` reports of a kind are kept (older keys get tombstones), so the topic stays small; but for the
switches, one report per group or topic that is its proof (a retried switch reads it back, the cockpit shows it),
so a migration of 1,000 groups keeps 1,000.
"""

from __future__ import annotations

import json
import time
from typing import Any

from confluent_kafka import Message
from pydantic import BaseModel

from mirror_engine.flow import InternalTopics, ensure_internal_topics
from mirror_engine.kafka import InternalTopicReader, MalformedRecord, admin_client, decoded, write_records
from mirror_engine.plan import MigrationPlan

GROUP_OUTCOME = "group-outcome"  # why a group was not switched (skipped, blocked, late); a newer switch report wins
REPORT_KINDS = ("validation", "group-switch", "producer-switch", "switch-approval", GROUP_OUTCOME, "schemas")
MAX_REPORT_BYTES = 512 * 1024
KEEP_PER_KIND = 50
# One per group or topic, never expired (its newest replaces it).
KEPT_EACH = ("group-switch", "producer-switch", GROUP_OUTCOME)


def bounded(report: dict[str, Any], limit: int = MAX_REPORT_BYTES) -> dict[str, Any]:
    """The report itself when its JSON fits `limit` bytes; else a copy whose longest lists are cut to fit, with
    `truncated` naming each cut list and its full length."""
    if len(json.dumps(report)) <= limit:
        return report
    cut = dict(report)
    truncated: dict[str, int] = {}
    lists = sorted((k for k, v in cut.items() if isinstance(v, list)), key=lambda k: -len(json.dumps(cut[k])))
    for key in lists:
        full = len(cut[key])
        while cut[key] and len(json.dumps({**cut, "truncated": {**truncated, key: full}})) > limit:
            cut[key] = cut[key][: len(cut[key]) // 2]
        truncated[key] = full
        if len(json.dumps({**cut, "truncated": truncated})) <= limit:
            break
    return {**cut, "truncated": truncated}


class StoredReport(BaseModel):
    """A report record as stored (`ReportStore.put`); validated where read, kept as its dict."""

    kind: str
    name: str
    stored_ms: int
    report: dict[str, Any]


def _decode(message: Message) -> dict[str, Any] | None:
    if not message.key():
        raise MalformedRecord("a report record without a key")
    raw = message.value()
    if raw is None:
        return None
    return StoredReport.model_validate_json(raw).model_dump()


class ReportStore:
    """Writes and reads one plan's reports; reading keeps one consumer and reads only what is new."""

    def __init__(self, plan: MigrationPlan, target_config: dict[str, str]) -> None:
        self.topics = InternalTopics.for_plan(plan)
        self.topic = self.topics.reports
        self.target_config = target_config
        self.latest: dict[str, dict[str, Any]] = {}  # key -> stored record, tombstoned keys removed
        self._tail = InternalTopicReader(target_config, self.topic, "mirror-engine-reports-reader")

    def put(self, kind: str, name: str, report: dict[str, Any]) -> str:
        """Store a report (replacing one of the same kind and name); returns its key."""
        if kind not in REPORT_KINDS:
            raise ValueError(f"report kind must be one of {', '.join(REPORT_KINDS)}, got {kind!r}")
        key = f"{kind}:{name}"
        record = {"kind": kind, "name": name, "stored_ms": int(time.time() * 1000), "report": bounded(report)}
        stored = self.read()
        if not self._tail.exists:  # the first report of the flow: its internal topics may not exist yet either
            ensure_internal_topics(admin_client(self.target_config), self.topics)
        older = sorted((r["stored_ms"], k) for k, r in stored.items() if r["kind"] == kind and k != key)
        expired = [] if kind in KEPT_EACH else [k for _ms, k in older[: max(0, len(older) + 1 - KEEP_PER_KIND)]]
        write_records(self.target_config, self.topic,
                      [*((old.encode(), None) for old in expired), (key.encode(), json.dumps(record).encode())],
                      f"report {key}", {"message.max.bytes": MAX_REPORT_BYTES * 2})
        return key

    def read(self, kind: str | None = None) -> dict[str, dict[str, Any]]:
        """{key: record} of the stored reports (of one kind), read up to the topic's current end."""
        self._read_new()
        return {k: r for k, r in self.latest.items() if kind is None or r["kind"] == kind}

    def newest(self, kind: str) -> list[dict[str, Any]]:
        """The stored records of a kind, newest first."""
        return sorted(self.read(kind).values(), key=lambda record: -record["stored_ms"])

    def _read_new(self) -> None:
        for message, record in decoded(self._tail.read_new(), _decode):
            key = (message.key() or b"").decode()
            if record is None:
                self.latest.pop(key, None)
            else:
                self.latest[key] = record

    def close(self) -> None:
        self._tail.close()
