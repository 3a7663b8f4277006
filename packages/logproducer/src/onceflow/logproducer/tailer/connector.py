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
from onceflow.core.config_def import ConfigDef, ConfigType
from onceflow.core.logging import get_logger
from onceflow.logproducer.dead_letter import dead_letter_record
from onceflow.logproducer.encoding import AccessEventEncoder
from onceflow.logproducer.formats.container import CONTAINER_LOGS
from onceflow.logproducer.formats.errors import MalformedLine
from onceflow.logproducer.formats.parser import FORMATS, LineParser
from onceflow.logproducer.tailer.container_lines import ContainerLines, Refused
from onceflow.logproducer.tailer.position import FilePosition
from onceflow.logproducer.tailer.reader import Line, RotatingFileReader
from onceflow.runtime.api.source import END_OF_INPUT_KEY, EndOfInput, SourceConnector, SourceRecord, SourceTask

_log = get_logger(__name__)

NEVER, EOF, IDLE = "never", "eof", "idle"
END_MODES = (NEVER, EOF, IDLE)


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
        .define(
            "format",
            ConfigType.STRING,
            "line format: auto (per file: its first line that fits decides between the httpd formats, json and"
            ' time-ip), common (Apache %h %l %u %t "%r" %>s %b), combined (Apache/nginx: common + "referer"'
            ' "user-agent"), main (nginx default: combined + "x-forwarded-for"; further quoted fields and a custom'
            " format's extension fields are ignored), json (a JSON object per line: nginx escape=json, Caddy,"
            " Traefik), time-ip (TIME IP: epoch ms/s or ISO 8601, then the client ip)",
            default="auto",
            choices=FORMATS,
        )
        .define(
            "container.log",
            ConfigType.STRING,
            "a container runtime's log file: none (the server's own file), docker (json-file driver:"
            ' {"log": ..., "stream": ..., "time": ...} per line), cri (Kubernetes, containerd, CRI-O: TIME STREAM'
            " F|P LINE), or auto (per file, its first line that is not blank decides); a line split into pieces"
            " by the runtime is put back together",
            default="auto",
            choices=CONTAINER_LOGS,
        )
        .define("batch.max.lines", ConfigType.INT, "most lines returned by one poll", default=5000, min=1)
        .define("poll.interval.ms", ConfigType.INT, "wait when there is no new data", default=100, min=1, max=60_000)
        .define("fingerprint.bytes", ConfigType.INT, "leading bytes that identify a file", default=256, min=16)
        .define("max.line.bytes", ConfigType.INT, "longer lines are dead-lettered in pieces", default=1 << 20, min=64)
        .define(
            "end.of.input",
            ConfigType.STRING,
            "when the input ends: never (tail for ever, following rotation), eof (at the end of the file: a "
            "finished file), idle (after end.of.input.idle.ms without a new line); an ended input closes every "
            "event-time window of the jobs that read the topic (an end-of-input marker)",
            default=NEVER,
            choices=END_MODES,
        )
        .define(
            "end.of.input.idle.ms",
            ConfigType.INT,
            "with end.of.input=idle: how long without a new line ends the input",
            default=10_000,
            min=1,
        )
    )


#: Keys of the task's source offset besides the file position: counts of the input so far, and
#: whether the input ended (see :class:`~onceflow.runtime.api.source.EndOfInput`).
LINES_KEY, EVENTS_KEY, DEAD_LETTERS_KEY = "lines", "events", "dead_letters"


class AccessLogFileTask(SourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        parsed = file_config_def().parse(config)
        # Only files under the worker's allowed_paths (none when it is empty), checked on every open:
        # the first one below and each one after a rotation (PathNotAllowed fails the task).
        self.reader = RotatingFileReader(
            parsed.get_str("file"),
            allowed=self.context.allowed_paths,
            fingerprint_bytes=parsed.get_int("fingerprint.bytes"),
            max_line_bytes=parsed.get_int("max.line.bytes"),
        )
        self.file = str(self.reader.path)
        self.partition: dict[str, Any] = {"file": self.file}
        self.topic = parsed.get_str("topic")
        self.dead_letter_topic = parsed.get_str("dead.letter.topic")
        max_line_bytes = parsed.get_int("max.line.bytes")
        self.parser = LineParser(parsed.get_str("format"), max_line_bytes=max_line_bytes)
        self.container = ContainerLines(parsed.get_str("container.log"), max_line_bytes=max_line_bytes)
        #: The file the lines come from (device, inode): format=auto decides per file.
        self._file_id: tuple[int, int] | None = None
        self.batch = parsed.get_int("batch.max.lines")
        self.idle_s = parsed.get_int("poll.interval.ms") / 1000
        self.encoder = AccessEventEncoder()
        self.end_mode = parsed.get_str("end.of.input")
        self.idle_end_s = parsed.get_int("end.of.input.idle.ms") / 1000
        committed = self.context.offset_reader.offset(self.partition) or {}
        #: Counts of the whole input so far, committed with the position (so exact across restarts).
        self.lines = int(committed.get(LINES_KEY, 0))
        self.events = int(committed.get(EVENTS_KEY, 0))
        self.dead_letters = int(committed.get(DEAD_LETTERS_KEY, 0))
        #: The input ended in an earlier life: nothing more is read, the end is reported again (the
        #: runtime's end of input may not have finished when that life stopped).
        self.finished = bool(committed.get(END_OF_INPUT_KEY))
        self.reader.open(FilePosition.from_dict(committed) if committed else None)
        self._last_line_at = time.monotonic()
        self._at_end = self.finished
        self._end_reported = False
        self._stopped = False
        #: Records returned by poll whose offsets are not committed yet.
        self._uncommitted = False

    def _offset(self, position: FilePosition, *, ended: bool = False) -> dict[str, Any]:
        offset = position.to_dict()
        offset.update({LINES_KEY: self.lines, EVENTS_KEY: self.events, DEAD_LETTERS_KEY: self.dead_letters})
        if ended:
            offset[END_OF_INPUT_KEY] = True
        return offset

    def _read(self) -> list[Line]:
        """The next lines; at the end of a finished file (end.of.input=eof), its unterminated last line."""
        lines = self.reader.read(self.batch)
        if lines:
            self._last_line_at = time.monotonic()
            return lines
        if self.end_mode == EOF:
            rest = self.reader.read_rest()
            self._at_end = rest is None
            return [rest] if rest is not None else []
        if self.end_mode == IDLE:
            self._at_end = time.monotonic() - self._last_line_at >= self.idle_end_s
        return []

    def end_of_input(self) -> EndOfInput | None:
        """The file is finished (eof) or idle long enough (idle): the whole input is these lines."""
        if not self._at_end or self._end_reported or self.reader.position is None:
            return None
        self._end_reported = self.finished = True
        _log.info("tailer.end_of_input", file=self.file, mode=self.end_mode, lines=self.lines, events=self.events,
                  dead_letters=self.dead_letters)  # fmt: skip
        return EndOfInput(self.partition, self._offset(self.reader.position, ended=True), (self.topic,))

    def poll(self) -> list[SourceRecord]:
        if self._stopped or self.finished:
            time.sleep(self.idle_s)
            return []
        if self.reader.refused is not None and self._uncommitted:
            # The lines read before a refused re-open commit first; the next poll fails the task.
            time.sleep(self.idle_s)
            return []
        lines = self._read()
        read = self._entries(lines)
        if self._at_end:
            read.extend(self.container.finish())  # the pieces still pending are the input's last lines
        if not read:
            if not self._at_end:
                time.sleep(self.idle_s)
            return []
        self._uncommitted = True
        return [self._record(line) for line in read]

    def _entries(self, lines: list[Line]) -> list[Line | Refused]:
        """The lines to hand on: a container log's entries put back together (a rotated-in file: its
        format and container kind are decided anew, after the last pieces of the file before it)."""
        read: list[Line | Refused] = []
        for line in lines:
            file_id = (line.position.device, line.position.inode)
            if file_id != self._file_id:
                if self._file_id is not None:
                    read.extend(self.container.finish())
                    self.container.reset()
                    self.parser.reset()
                self._file_id = file_id
            read.extend(self.container.feed(line))
        return read

    def _record(self, read: Line | Refused) -> SourceRecord:
        """The record of one line: its event, or a dead letter with the reason."""
        self.lines += 1
        if isinstance(read, Refused):
            line, error = read.line, read.error
        else:
            line, error = read, None
            try:
                event = self.parser.parse(line.data)
            except MalformedLine as exc:
                error = exc
        if error is not None:
            self.dead_letters += 1
            offset = self._offset(line.position)
            _log.warning("tailer.dead_letter", file=self.file, offset=line.start, reason=error.reason)
            return dead_letter_record(
                self.dead_letter_topic,
                line.file_bytes,
                error.reason,
                kind=error.kind,
                source=self.file,
                line_offset=line.start,
                source_partition=self.partition,
                source_offset=offset,
            )
        self.events += 1
        return SourceRecord(
            self.partition,
            self._offset(line.position),
            self.topic,
            self.encoder.encode(event),
            event["ip"].encode(),
        )  # no record timestamp: the event time is in the value (see SourceRecord.timestamp)

    def commit(self) -> None:
        self._uncommitted = False

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
