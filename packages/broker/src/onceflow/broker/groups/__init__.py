"""The consumer group coordinator: classic group membership, offsets, transactional offsets (KIP-447)."""

from onceflow.broker.groups.config import GroupConfig
from onceflow.broker.groups.coordinator import GroupCoordinator
from onceflow.broker.groups.exceptions import (
    CoordinatorNotRunning,
    GroupCoordinatorError,
    IllegalGroupTransition,
    InvalidGroupRecord,
)
from onceflow.broker.groups.requests import Committer, JoinRequest, SyncRequest, TxnOffsetCommitRequest
from onceflow.broker.groups.results import (
    GroupDescription,
    GroupListing,
    JoinedMember,
    JoinResult,
    MemberDescription,
    OffsetAndMetadata,
    SyncResult,
)
from onceflow.broker.groups.state import GroupState

__all__ = [
    "Committer",
    "CoordinatorNotRunning",
    "GroupConfig",
    "GroupCoordinator",
    "GroupCoordinatorError",
    "GroupDescription",
    "GroupListing",
    "GroupState",
    "IllegalGroupTransition",
    "InvalidGroupRecord",
    "JoinRequest",
    "JoinResult",
    "JoinedMember",
    "MemberDescription",
    "OffsetAndMetadata",
    "SyncRequest",
    "SyncResult",
    "TxnOffsetCommitRequest",
]
