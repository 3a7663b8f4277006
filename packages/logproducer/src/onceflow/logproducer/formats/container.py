"""Container log files: an access log as Docker's ``json-file`` driver and Kubernetes (CRI) write it.

A server in a container writes its access log to stdout; the runtime wraps each line it copies into an
entry of its own:

- **docker** (``/var/lib/docker/containers/<id>/<id>-json.log``, also what ``docker logs`` reads): one
  JSON object per line, ``{"log": "<the line>\\n", "stream": "stdout", "time": "..."}``. A line longer
  than Docker's buffer (16 KiB) is split into several entries; only the last one's ``log`` ends with
  a newline.
- **cri** (``/var/log/pods/<ns>_<pod>_<uid>/<container>/0.log``, containerd and CRI-O):
  ``<RFC 3339 time> <stdout|stderr> <tag> <the line>``. The tag is ``F`` for a full line, ``P`` for a
  piece of a longer one (tags are ``:``-separated; a ``P`` among them marks a piece).

The ``container.log`` setting says which one a file is: ``none``, ``docker``, ``cri``, or ``auto``
(the default): per file, its first line that is not blank decides (:func:`container_kind`). Which
stream a line came from does not matter to its parsing: an error log line on stderr is simply not an
access-log line (a dead letter). Putting the pieces back together is
:class:`~onceflow.logproducer.tailer.container_lines.ContainerLines`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Final

from onceflow.logproducer.formats.errors import MalformedLine, shown

__all__ = ["CONTAINER_LOGS", "CRI", "DOCKER", "NONE", "Entry", "container_kind", "read_entry"]

NONE, DOCKER, CRI = "none", "docker", "cri"
#: The choices of the ``container.log`` setting.
CONTAINER_LOGS: Final = ("auto", NONE, DOCKER, CRI)

#: ``<time> <stream> <tags> <content>``: the time is RFC 3339 (checked by its date only).
_CRI: Final = re.compile(
    r"([0-9]{4}-[0-9][0-9]-[0-9][0-9]T\S+) (stdout|stderr) ([A-Za-z]+(?::[A-Za-z]+)*) (.*)", re.DOTALL
)


@dataclass(frozen=True, slots=True)
class Entry:
    """What one container-log line holds: the stream, the text written (without its newline) and
    whether it is a piece of a longer line, continued by the stream's next entry."""

    stream: str
    content: bytes
    partial: bool


def container_kind(line: str) -> str:
    """What the first line of a file says it is: ``docker``, ``cri`` or ``none``."""
    if line.startswith("{"):
        try:
            _docker(line)
        except MalformedLine:
            return NONE
        return DOCKER
    return CRI if _CRI.fullmatch(line) else NONE


def read_entry(kind: str, line: str) -> Entry:
    """The entry of one line (decoded, no newline) of a ``docker`` or ``cri`` file; MalformedLine
    (``unrecognised``) when the line is not one."""
    return _docker(line) if kind == DOCKER else _cri(line)


def _docker(line: str) -> Entry:
    try:
        entry = json.loads(line)
    except (ValueError, RecursionError) as exc:
        raise MalformedLine(f"not a docker json-file entry: {shown(str(exc))}") from None
    if not isinstance(entry, dict):
        raise MalformedLine(f"not a docker json-file entry: a JSON {type(entry).__name__}, not an object")
    text, stream = entry.get("log"), entry.get("stream")
    if not isinstance(text, str) or not isinstance(stream, str):
        raise MalformedLine('not a docker json-file entry: "log" and "stream" must be strings')
    partial = not text.endswith("\n")
    return Entry(stream, (text if partial else text[:-1]).encode("utf-8", "surrogatepass"), partial)


def _cri(line: str) -> Entry:
    match = _CRI.fullmatch(line)
    if match is None:
        raise MalformedLine(f"not a CRI log entry (<time> <stdout|stderr> <F|P> <line>): {shown(line)}")
    _, stream, tags, content = match.groups()
    return Entry(stream, content.encode("utf-8"), "P" in tags.split(":"))
