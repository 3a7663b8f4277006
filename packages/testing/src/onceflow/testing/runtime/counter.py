"""CounterSourceConnector: record ``n`` has value ``b"<n>"``, key ``k<n % keys>`` and header ``seq``.

Settings: ``topic``, ``count`` (0 = no end), ``rate`` (records/s per task, 0 = unpaced),
``batch.size``, ``keys`` and ``fail.at`` (raise when about to emit that number: a FAILED task).
Task ``k`` of ``n`` counts ``k, k + n, ...``; position ``{"n": last emitted}``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from onceflow.core.config_def import ConfigDef, ConfigType
from onceflow.runtime.api.source import SourceConnector, SourceRecord, SourceTask


def counter_config_def() -> ConfigDef:
    return (
        ConfigDef()
        .define("topic", ConfigType.STRING, "topic to write")
        .define("count", ConfigType.INT, "records in total (0 = no end)", default=0, min=0)
        .define("rate", ConfigType.FLOAT, "records per second per task (0 = unpaced)", default=0, min=0)
        .define("batch.size", ConfigType.INT, "records per poll", default=100, min=1)
        .define("keys", ConfigType.INT, "distinct keys", default=10, min=1)
        .define("fail.at", ConfigType.INT, "fail the task at this record (-1 = never)", default=-1)
    )


class CounterSourceTask(SourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        parsed = (
            counter_config_def()
            .define("task.index", ConfigType.INT, "", default=0)
            .define("task.count", ConfigType.INT, "", default=1)
            .parse(config)
        )
        self.topic = parsed.get_str("topic")
        self.count = parsed.get_int("count")
        self.rate = parsed.get_float("rate")
        self.batch = parsed.get_int("batch.size")
        self.keys = parsed.get_int("keys")
        self.fail_at = parsed.get_int("fail.at")
        self.step = parsed.get_int("task.count")
        index = parsed.get_int("task.index")
        self.partition: dict[str, Any] = {"counter": index}
        committed = self.context.offset_reader.offset(self.partition)
        self.next = int(committed["n"]) + self.step if committed else index
        self.started = time.monotonic()
        self.emitted = 0
        self.commits = 0

    def poll(self) -> list[SourceRecord]:
        budget = self.batch
        if self.rate > 0:
            budget = min(budget, int((time.monotonic() - self.started) * self.rate) - self.emitted)
        if budget <= 0 or (self.count and self.next >= self.count):
            time.sleep(0.02)
            return []
        records = []
        for _ in range(budget):
            n = self.next
            if self.count and n >= self.count:
                break
            if n == self.fail_at:
                raise RuntimeError(f"counter told to fail at record {n}")
            records.append(
                SourceRecord(
                    self.partition,
                    {"n": n},
                    self.topic,
                    b"%d" % n,
                    b"k%d" % (n % self.keys),
                    None,
                    [("seq", b"%d" % n)],
                )
            )
            self.next += self.step
        self.emitted += len(records)
        return records

    def commit(self) -> None:
        self.commits += 1

    def stop(self) -> None:
        pass


class CounterSourceConnector(SourceConnector):
    @classmethod
    def config_def(cls) -> ConfigDef:
        return counter_config_def()

    @classmethod
    def task_class(cls) -> type[SourceTask]:
        return CounterSourceTask

    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{**self.config, "task.index": str(k), "task.count": str(max_tasks)} for k in range(max_tasks)]
