"""Structured logging for every onceflow service.

Log lines carry an event name and ids as key=value pairs (or one JSON object per line)::

    2026-11-22T14:30:01.123Z INFO onceflow.coordinator txn.committed job=ipcount batch=42 epoch=3

Use :func:`get_logger` and pass ids as keyword arguments::

    log = get_logger(__name__)
    log.info("txn.committed", job=job, batch=batch, epoch=epoch)

Plain ``logging`` calls still work and are formatted the same way.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any, Literal

_FIELDS_ATTR = "onceflow_fields"


def _render_value(value: Any) -> str:
    text = str(value)
    if not text or any(c in text for c in ' ="\n'):
        return json.dumps(text)
    return text


class KeyValueFormatter(logging.Formatter):
    """``<utc time> <LEVEL> <logger> <event> key=value ...``; exceptions follow on later lines."""

    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        line = f"{stamp}.{int(record.msecs):03d}Z {record.levelname} {record.name} {record.getMessage()}"
        fields: dict[str, Any] = getattr(record, _FIELDS_ATTR, {})
        if fields:
            line += " " + " ".join(f"{k}={_render_value(v)}" for k, v in fields.items())
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, event, then the fields."""

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "ts": round(record.created, 3),
            "level": record.levelname,
            "logger": record.name,
            "event": record.getMessage(),
        }
        doc.update(getattr(record, _FIELDS_ATTR, {}))
        if record.exc_info:
            doc["exc"] = self.formatException(record.exc_info)
        return json.dumps(doc, default=str)


class StructuredLogger:
    """A thin wrapper over a stdlib logger that takes ids as keyword arguments."""

    def __init__(self, logger: logging.Logger) -> None:
        self._logger = logger

    def _log(self, level: int, event: str, exc_info: bool, fields: dict[str, Any]) -> None:
        if self._logger.isEnabledFor(level):
            self._logger.log(level, event, exc_info=exc_info, extra={_FIELDS_ATTR: fields}, stacklevel=3)

    def debug(self, event: str, **fields: Any) -> None:
        self._log(logging.DEBUG, event, False, fields)

    def info(self, event: str, **fields: Any) -> None:
        self._log(logging.INFO, event, False, fields)

    def warning(self, event: str, **fields: Any) -> None:
        self._log(logging.WARNING, event, False, fields)

    def error(self, event: str, **fields: Any) -> None:
        self._log(logging.ERROR, event, False, fields)

    def exception(self, event: str, **fields: Any) -> None:
        """Log at ERROR with the current exception's traceback."""
        self._log(logging.ERROR, event, True, fields)

    def is_enabled_for(self, level: int) -> bool:
        return self._logger.isEnabledFor(level)


def record_fields(record: logging.LogRecord) -> dict[str, Any]:
    """The ids a structured log call gave ``record`` (empty for a plain ``logging`` call)."""
    fields: dict[str, Any] = getattr(record, _FIELDS_ATTR, {})
    return fields


def get_logger(name: str) -> StructuredLogger:
    """A structured logger named ``name`` (use the module's ``__name__``)."""
    return StructuredLogger(logging.getLogger(name))


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes each record to ``sys.stderr`` as it is *then*: a stream captured and closed in between
    (a test's capture, a CLI run in-process) never makes a later record, from any thread, fail with
    "I/O operation on closed file" (as :data:`logging.lastResort` does)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


def configure_logging(level: str = "INFO", fmt: Literal["kv", "json"] = "kv", stream: Any = None) -> None:
    """Route all logging to ``stream`` (by default the current ``sys.stderr`` of each record) in the
    chosen format. Idempotent."""
    handler = logging.StreamHandler(stream) if stream is not None else _StderrHandler()
    handler.setFormatter(JsonFormatter() if fmt == "json" else KeyValueFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        if getattr(old, "_onceflow", False):
            root.removeHandler(old)
    handler._onceflow = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level.upper())
