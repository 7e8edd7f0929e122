"""Watching a flow: status records and their readers, the loopback HTTP/metrics endpoint, heartbeats, reports and their
HTML, and the flow watch and view that sensors and the cockpit read."""

from mirror_engine.observe.flow_view import FlowView
from mirror_engine.observe.flow_watch import FlowWatch
from mirror_engine.observe.heartbeats import LatencyError, last_heartbeat, measure_latency
from mirror_engine.observe.http import StatusServer
from mirror_engine.observe.readout import (
    NO_ENGINE,
    Drain,
    DrainSample,
    clock,
    duration,
    flow_state,
    partition_page,
    switch_summary,
    waiting_sentence,
)
from mirror_engine.observe.reports import GROUP_OUTCOME, MAX_REPORT_BYTES, ReportStore, bounded
from mirror_engine.observe.status import (
    STATUS_PARTITIONS,
    WorkerStatusFeed,
    assigned_partitions,
    flow_problems,
    is_live,
    partition_count,
    prometheus_text,
    read_worker_statuses,
    render_flow_status,
    replication_lag,
    status_record,
    worst_first,
)
from mirror_engine.observe.validation_page import render_validation_page, render_validation_section

__all__ = [
    "GROUP_OUTCOME",
    "MAX_REPORT_BYTES",
    "NO_ENGINE",
    "STATUS_PARTITIONS",
    "Drain",
    "DrainSample",
    "FlowView",
    "FlowWatch",
    "LatencyError",
    "ReportStore",
    "StatusServer",
    "WorkerStatusFeed",
    "assigned_partitions",
    "bounded",
    "clock",
    "duration",
    "flow_problems",
    "flow_state",
    "is_live",
    "last_heartbeat",
    "measure_latency",
    "partition_count",
    "partition_page",
    "prometheus_text",
    "read_worker_statuses",
    "render_flow_status",
    "render_validation_page",
    "render_validation_section",
    "replication_lag",
    "status_record",
    "switch_summary",
    "waiting_sentence",
    "worst_first",
]
