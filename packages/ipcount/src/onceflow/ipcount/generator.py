"""``access-log-generator``: the example's deterministic synthetic traffic (:mod:`onceflow.ipcount.traffic`) as a
source connector of the runtime, registered as a plugin (the ``onceflow.connectors`` entry point of this
package), so ``onceflow connect create ... connector.class=access-log-generator`` runs it once the example is
installed. Its events are encoded as the log producer's connectors encode theirs (:mod:`onceflow.logproducer.encoding`).

With ``tasks.max = n``, task ``k`` produces events ``k, k + n, k + 2n, ...`` (below ``count`` when
it is set). Its source partition is ``{"generator": "access-log", "task": k, "tasks": n}`` and its
position ``{"seq": i}``, the last event it produced; every record carries ``seq`` as a header.
``rate`` (events/s, over all tasks) paces the wall clock; event times do not depend on it.
:class:`EncodedTraffic` joins each event from pre-encoded fields; the benches reuse it for a live load
stamped with the wall clock.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

from onceflow.core import topics
from onceflow.core.config_def import ConfigDef, ConfigType
from onceflow.ipcount.traffic import define_traffic, model_from_config
from onceflow.ipcount.traffic.model import BLOCK, METHODS, STATUSES, USER_AGENTS, TrafficModel, block, pools
from onceflow.logproducer.encoding import HEADER, AccessEventEncoder, TimestampEncoder
from onceflow.runtime.api.source import END_OF_INPUT_KEY, EndOfInput, SourceConnector, SourceRecord, SourceTask

SEQ_HEADER = "seq"


def generator_config_def() -> ConfigDef:
    """The connector's settings: the traffic model's (:func:`onceflow.ipcount.traffic.define_traffic`) and
    where, how many and how fast."""
    return define_traffic(
        ConfigDef()
        .define("topic", ConfigType.STRING, "topic to write", default=topics.SOURCE_TOPIC)
        .define("count", ConfigType.INT, "events to generate in total (0 = no end)", default=0, min=0)
        .define(
            "rate", ConfigType.FLOAT, "events per second over all tasks (0 = as fast as possible)", default=0, min=0
        )
        .define("batch.size", ConfigType.INT, "most events returned by one poll", default=5000, min=1, max=1_000_000)
        .define(
            "end.of.input",
            ConfigType.STRING,
            "after the last of count events: never (just stop), eof (end the input: every event-time window "
            "of the jobs that read the topic closes, see onceflow.core.end_of_input)",
            default="never",
            choices=("never", "eof"),
        )
    )


class EncodedTraffic:
    """The events of a traffic model, encoded: each one joined from pre-encoded pools of its fields
    (ips, paths, methods, statuses, agents), no per-event record built or schema walked."""

    def __init__(self, model: TrafficModel) -> None:
        self.model = model
        encoder = AccessEventEncoder()
        ips, paths = pools(model)
        self._ip_keys = [ip.encode() for ip in ips]
        self._ips = [encoder.string(ip) for ip in ips]
        self._paths = [encoder.string(p) for p in paths]
        self._methods = [encoder.string(m) for m in METHODS]
        self._statuses = [encoder.small_int(s) for s in STATUSES]
        self._agents = [encoder.string(a) for a in USER_AGENTS]
        self._size = encoder.small_int
        self._time = TimestampEncoder()

    def encoded(
        self, start: int, stop: int, step: int = 1, *, event_time: int | None = None
    ) -> Iterator[tuple[int, bytes, bytes]]:
        """``(number, key, value)`` of events ``start, start + step, ...`` below ``stop``: the key is the
        ip, the value the AccessEvent in the single-object encoding. ``event_time`` (ms) replaces the
        model's event time of every one (a live load stamped with the wall clock)."""
        model, ips, ip_keys, paths, methods = self.model, self._ips, self._ip_keys, self._paths, self._methods
        statuses, agents, size_of, time_of = self._statuses, self._agents, self._size, self._time
        stamp = time_of(event_time) if event_time is not None else None
        number = start // BLOCK
        b = block(model, number)
        for i in range(start, stop, step):
            if i // BLOCK != number:
                number = i // BLOCK
                b = block(model, number)
            j = i - number * BLOCK
            ip = b.ip[j]
            value = b"".join(
                (
                    HEADER,
                    stamp if stamp is not None else time_of(b.event_time[j]),
                    ips[ip],
                    methods[b.method[j]],
                    paths[b.path[j]],
                    statuses[b.status[j]],
                    size_of(b.size[j]),
                    agents[b.agent[j]],
                )
            )
            yield i, ip_keys[ip], value


class AccessLogGeneratorTask(SourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        parsed = (
            generator_config_def()
            .define("task.index", ConfigType.INT, "", default=0)
            .define("task.count", ConfigType.INT, "", default=1, min=1)
            .parse(config)
        )
        self.model = model_from_config(parsed)
        self.topic = parsed.get_str("topic")
        self.count = parsed.get_int("count")
        self.batch = parsed.get_int("batch.size")
        self.step = parsed.get_int("task.count")
        index = parsed.get_int("task.index")
        self.rate = parsed.get_float("rate") / self.step
        self.partition: dict[str, Any] = {"generator": "access-log", "task": index, "tasks": self.step}
        committed = self.context.offset_reader.offset(self.partition)
        self.next = int(committed["seq"]) + self.step if committed else index
        self.end_input = parsed.get_str("end.of.input") == "eof" and self.count > 0
        self._end_reported = False
        self._stopped = False
        self._started = time.monotonic()
        self._emitted = 0
        self._traffic = EncodedTraffic(self.model)

    def _budget(self) -> int:
        """How many events the rate allows now (the whole batch when unpaced)."""
        if self.rate <= 0:
            return self.batch
        allowed = int((time.monotonic() - self._started) * self.rate) - self._emitted
        if allowed <= 0:
            time.sleep(min(0.05, (1 - allowed) / self.rate))
            return 0
        return min(allowed, self.batch)

    def poll(self) -> list[SourceRecord]:
        if self._stopped:
            return []
        if self.count and self.next >= self.count:
            time.sleep(0.1)
            return []
        budget = self._budget()
        stop = self.next + budget * self.step
        if self.count:
            stop = min(stop, self.count)
        records = self._records(self.next, stop)
        self.next += len(records) * self.step
        self._emitted += len(records)
        return records

    def _records(self, start: int, stop: int) -> list[SourceRecord]:
        topic, partition = self.topic, self.partition
        return [
            SourceRecord(partition, {"seq": i}, topic, value, key, headers=[(SEQ_HEADER, b"%d" % i)])
            for i, key, value in self._traffic.encoded(start, stop, self.step)
        ]

    def end_of_input(self) -> EndOfInput | None:
        """With end.of.input=eof: the task's share of the ``count`` events is committed; the input ends
        when every task's share is (``sources`` = the tasks)."""
        if not self.end_input or self._end_reported or self.next < self.count:
            return None
        self._end_reported = True
        offset = {"seq": self.next - self.step, END_OF_INPUT_KEY: True}
        return EndOfInput(self.partition, offset, (self.topic,), sources=self.step)

    def stop(self) -> None:
        self._stopped = True


class AccessLogGeneratorConnector(SourceConnector):
    version: ClassVar[str] = "0.1.0"

    @classmethod
    def config_def(cls) -> ConfigDef:
        return generator_config_def()

    @classmethod
    def task_class(cls) -> type[SourceTask]:
        return AccessLogGeneratorTask

    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)
        generator_config_def().parse(config)

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{**self.config, "task.index": str(k), "task.count": str(max_tasks)} for k in range(max_tasks)]
