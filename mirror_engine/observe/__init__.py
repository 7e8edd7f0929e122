"""Watching a flow: status records and their readers, the loopback HTTP/metrics endpoint, heartbeats, reports, and the
flow watch and view that sensors and the cockpit read."""

from mirror_engine.observe.flow_view import FlowView
from mirror_engine.observe.flow_watch import FlowWatch
from mirror_engine.observe.heartbeats import LatencyError, last_heartbeat, measure_latency
from mirror_engine.observe.http import StatusServer
from mirror_engine.observe.readout import (
    NO_ENGINE,
    Drain,
    DrainSample,
    duration,
    flow_state,
    partition_page,
    switch_summary,
    waiting_sentence,
)
from mirror_engine.observe.reports import MAX_REPORT_BYTES, ReportStore, bounded
from mirror_engine.observe.status import (
    WorkerStatusFeed,
    flow_problems,
    is_live,
    prometheus_text,
    read_worker_statuses,
    render_flow_status,
    replication_lag,
)

__all__ = [
    "MAX_REPORT_BYTES",
    "NO_ENGINE",
    "Drain",
    "DrainSample",
    "FlowView",
    "FlowWatch",
    "LatencyError",
    "ReportStore",
    "StatusServer",
    "WorkerStatusFeed",
    "bounded",
    "duration",
    "flow_problems",
    "flow_state",
    "is_live",
    "last_heartbeat",
    "measure_latency",
    "partition_page",
    "prometheus_text",
    "read_worker_statuses",
    "render_flow_status",
    "replication_lag",
    "switch_summary",
    "waiting_sentence",
]
