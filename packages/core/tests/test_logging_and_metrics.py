"""Structured logs carry ids as key=value or JSON; metrics are exposed over HTTP."""

from __future__ import annotations

import io
import json
import logging
import sys
import urllib.request

import pytest

from onceflow.core.logging import configure_logging, get_logger
from onceflow.core.metrics import ServiceMetrics, serve_metrics
from onceflow.core.topics import SINK_TOPIC, SOURCE_TOPIC, is_internal


def test_key_value_lines_carry_ids() -> None:
    out = io.StringIO()
    configure_logging("INFO", "kv", stream=out)
    get_logger("onceflow.test").info("txn.committed", job="ipcount", batch=42, reason="all voted yes")
    line = out.getvalue().strip()
    assert line.endswith('onceflow.test txn.committed job=ipcount batch=42 reason="all voted yes"')
    assert " INFO " in line


def test_json_lines_are_parseable() -> None:
    out = io.StringIO()
    configure_logging("DEBUG", "json", stream=out)
    get_logger("onceflow.test").debug("producer.fenced", pid=7, epoch=3)
    doc = json.loads(out.getvalue())
    assert doc["event"] == "producer.fenced"
    assert (doc["pid"], doc["epoch"], doc["level"]) == (7, 3, "DEBUG")


def test_configure_logging_is_idempotent() -> None:
    out = io.StringIO()
    configure_logging("INFO", "kv", stream=io.StringIO())
    configure_logging("INFO", "kv", stream=out)
    get_logger("onceflow.test").info("hello.world")
    assert out.getvalue().count("hello.world") == 1


def test_the_default_stream_is_stderr_as_it_is_when_each_record_is_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 24: a handler bound to a test's captured stderr failed every later record ("I/O operation
    on closed file", from threads such as the coordinator's deliveries) once the capture closed."""
    first, second = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    configure_logging("INFO", "kv")
    get_logger("onceflow.test").info("first.stream")
    first.close()
    monkeypatch.setattr(sys, "stderr", second)
    monkeypatch.setattr(logging, "raiseExceptions", True)
    get_logger("onceflow.test").info("second.stream")
    assert "second.stream" in second.getvalue() and "Logging error" not in second.getvalue()


def test_metrics_endpoint_serves_service_metrics() -> None:
    metrics = ServiceMetrics("coordinator")
    outcomes = metrics.counter("transactions_total", "Transactions by outcome", ("outcome",))
    outcomes.labels(outcome="committed").inc(3)
    endpoint = serve_metrics(metrics)
    try:
        body = urllib.request.urlopen(f"http://127.0.0.1:{endpoint.port}/metrics", timeout=5).read().decode()
    finally:
        endpoint.stop()
    assert 'onceflow_coordinator_transactions_total{outcome="committed"} 3.0' in body


def test_topic_names() -> None:
    assert (SOURCE_TOPIC, SINK_TOPIC) == ("ip_count_source", "ip_count_sink")
    assert is_internal("_onceflow_coordinator_log")
    assert not is_internal(SOURCE_TOPIC)
