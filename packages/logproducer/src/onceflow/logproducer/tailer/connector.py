"""``access-log-file``: one task tails one file.

Source partition ``{"file": <absolute path>}``; position :class:`FilePosition` (device, inode,
fingerprint, offset after the last line). A good line becomes an AccessEvent record (key = ip,
timestamp = event time); a malformed one goes to the dead-letter topic with the reason and the
original bytes. Both carry the position, so the exactly-once runtime commits a dead letter in the
same transaction as the position that passes it: nothing is dropped and nothing is sent twice.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from onceflow.core import topics
from onceflow.core.logging import get_logger
from onceflow.logproducer.dead_letter import dead_letter_record
from onceflow.logproducer.encoding import AccessEventEncoder
from onceflow.logproducer.formats.errors import MalformedLine
from onceflow.logproducer.formats.parser import FORMATS, LineParser
from onceflow.logproducer.tailer.position import FilePosition
from onceflow.logproducer.tailer.reader import RotatingFileReader
from onceflow.runtime.api.source import SourceConnector, SourceRecord, SourceTask
from onceflow.runtime.config.definition import ConfigDef, ConfigType

_log = get_logger(__name__)


def _absolute(value: str) -> str | None:
    return None if value.strip() else "must name a file"


def file_config_def() -> ConfigDef:
    return (
        ConfigDef()
        .define(
            "file", ConfigType.STRING, "the log file to tail (rotated siblings are found next to it)", check=_absolute
        )
        .define("topic", ConfigType.STRING, "topic for events", default=topics.SOURCE_TOPIC)
        .define("dead.letter.topic", ConfigType.STRING, "topic for malformed lines", default=topics.DEAD_LETTER_TOPIC)
        .define("format", ConfigType.STRING, "line format", default="auto", choices=FORMATS)
        .define("batch.max.lines", ConfigType.INT, "most lines returned by one poll", default=5000, min=1)
        .define("poll.interval.ms", ConfigType.INT, "wait when there is no new data", default=100, min=1, max=60_000)
        .define("fingerprint.bytes", ConfigType.INT, "leading bytes that identify a file", default=256, min=16)
        .define("max.line.bytes", ConfigType.INT, "longer lines are dead-lettered in pieces", default=1 << 20, min=64)
    )


class AccessLogFileTask(SourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        parsed = file_config_def().parse(config)
        self.reader = RotatingFileReader(
            parsed.get_str("file"),
            fingerprint_bytes=parsed.get_int("fingerprint.bytes"),
            max_line_bytes=parsed.get_int("max.line.bytes"),
        )
        self.file = str(self.reader.path)
        self.partition: dict[str, Any] = {"file": self.file}
        self.topic = parsed.get_str("topic")
        self.dead_letter_topic = parsed.get_str("dead.letter.topic")
        self.parser = LineParser(parsed.get_str("format"))
        self.batch = parsed.get_int("batch.max.lines")
        self.idle_s = parsed.get_int("poll.interval.ms") / 1000
        self.encoder = AccessEventEncoder()
        self.dead_letters = 0
        committed = self.context.offset_reader.offset(self.partition)
        self.reader.open(FilePosition.from_dict(committed) if committed else None)
        self._stopped = False

    def poll(self) -> list[SourceRecord]:
        if self._stopped:
            return []
        lines = self.reader.read(self.batch)
        if not lines:
            time.sleep(self.idle_s)
            return []
        records = []
        for line in lines:
            offset = line.position.to_dict()
            try:
                event = self.parser.parse(line.data)
            except MalformedLine as exc:
                self.dead_letters += 1
                _log.warning("tailer.dead_letter", file=self.file, offset=line.start, reason=exc.reason)
                records.append(
                    dead_letter_record(
                        self.dead_letter_topic,
                        line.data,
                        exc.reason,
                        source=self.file,
                        line_offset=line.start,
                        source_partition=self.partition,
                        source_offset=offset,
                    )
                )
                continue
            records.append(
                SourceRecord(
                    self.partition,
                    offset,
                    self.topic,
                    self.encoder.encode(event),
                    event["ip"].encode(),
                    event["event_time"],
                )
            )
        return records

    def stop(self) -> None:
        self._stopped = True


class AccessLogFileConnector(SourceConnector):
    version: ClassVar[str] = "0.1.0"

    @classmethod
    def config_def(cls) -> ConfigDef:
        return file_config_def()

    @classmethod
    def task_class(cls) -> type[SourceTask]:
        return AccessLogFileTask

    def start(self, config: Mapping[str, str]) -> None:
        parsed = file_config_def().parse(config)
        self.config = {**config, "file": str(Path(parsed.get_str("file")).absolute())}

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.config)]
