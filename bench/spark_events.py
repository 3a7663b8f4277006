"""Where a micro-batch's time goes, from Spark's own event log: its job, each stage, and what follows the job.

Spark's ``durationMs`` (``StreamingQueryProgress``) says how long ``addBatch`` took, not what inside it:
the job's stages (for the IP-count job, stage 0 reads, decodes and pre-aggregates; stage 1 updates
the windowed state and writes the output) and, after the job, the sink's commit (for exactly-once,
the driver's 2PC) and the offset commit. The event log has every job's and stage's start and end,
tagged with the streaming query and batch, so a run with ``spark.eventLog.enabled`` can be taken apart
afterwards, per query, over the batches that read data.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any


def event_log_conf(directory: Path) -> dict[str, str]:
    """Spark configuration writing an uncompressed event log under ``directory`` (created here)."""
    directory.mkdir(parents=True, exist_ok=True)
    return {
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": directory.as_uri(),
        "spark.eventLog.compress": "false",
    }


def _events(directory: Path) -> Iterator[dict[str, Any]]:
    for path in sorted(p for p in directory.rglob("*") if p.is_file() and not p.name.startswith(".")):
        with path.open(encoding="utf-8") as lines:
            for line in lines:
                if line.startswith("{"):
                    yield json.loads(line)


def _epoch_ms(timestamp: str) -> float:
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp() * 1000


def batch_breakdown(directory: Path) -> dict[str, dict[str, float]]:
    """Per query name, the median ms of each part of its batches with input rows.

    Parts: ``before the job`` (trigger start to the first job's submission: offsets, planning, the
    offset log), ``job J stage N`` (submission to completion), ``after the job`` (the last job's end to the
    trigger's end: the sink's commit, then the commit log), and ``trigger`` (the whole batch).
    """
    names: dict[str, str] = {}
    jobs: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    stages: dict[int, float] = {}
    batches: list[tuple[str, str, float, float]] = []  # query, batch, start, trigger ms
    by_id: dict[int, dict[str, Any]] = {}
    for event in _events(directory):
        kind = event["Event"]
        if kind.endswith("QueryStartedEvent"):
            names[event["id"]] = event["name"]
        elif kind == "SparkListenerJobStart":
            props = event.get("Properties") or {}
            job = {"start": event["Submission Time"], "stages": [s["Stage ID"] for s in event["Stage Infos"]]}
            by_id[event["Job ID"]] = job
            query = names.get(props.get("sql.streaming.queryId", ""), "")
            if query and "streaming.sql.batchId" in props:
                jobs[(query, props["streaming.sql.batchId"])].append(job)
        elif kind == "SparkListenerJobEnd" and event["Job ID"] in by_id:
            by_id[event["Job ID"]]["end"] = event["Completion Time"]
        elif kind == "SparkListenerStageCompleted":
            info = event["Stage Info"]
            if info.get("Submission Time") is not None and info.get("Completion Time") is not None:
                stages[info["Stage ID"]] = info["Completion Time"] - info["Submission Time"]
        elif kind.endswith("QueryProgressEvent"):
            progress = event["progress"]
            if sum(source.get("numInputRows", 0) for source in progress["sources"]):
                trigger = progress["durationMs"].get("triggerExecution", 0)
                batches.append((progress["name"], str(progress["batchId"]), _epoch_ms(progress["timestamp"]), trigger))
    parts: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for query, batch, start, trigger in batches:
        ran = sorted((j for j in jobs.get((query, batch), []) if "end" in j), key=lambda j: j["start"])
        if not ran:
            continue
        timings = parts[query]
        timings["before the job"].append(ran[0]["start"] - start)
        for job_number, job in enumerate(ran):
            for number, stage in enumerate(job["stages"]):
                if stage in stages:
                    timings[f"job {job_number} stage {number}"].append(stages[stage])
        timings["after the job"].append(start + trigger - ran[-1]["end"])
        timings["trigger"].append(trigger)
    return {query: {part: statistics.median(v) for part, v in timings.items()} for query, timings in parts.items()}
