"""A durable, append-only, CRC-framed key/value log for the broker's internal state.

Group metadata and offsets live in one today; transaction state and topic metadata will follow.
Values are opaque bytes: each user encodes its own (versioned) records.
"""

from onceflow.broker.statelog.exceptions import (
    StateLogClosed,
    StateLogCorrupt,
    StateLogError,
    StateLogLocked,
    StateLogWriteFailed,
)
from onceflow.broker.statelog.log import StateLog

__all__ = [
    "StateLog",
    "StateLogClosed",
    "StateLogCorrupt",
    "StateLogError",
    "StateLogLocked",
    "StateLogWriteFailed",
]
