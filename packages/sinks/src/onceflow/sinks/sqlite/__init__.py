"""The SQLite sink participant (the embedded default)."""

from onceflow.sinks.sqlite.participant import SqliteParticipant

__all__ = ["SqliteParticipant"]
