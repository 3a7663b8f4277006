"""``RunningGroups``: what the group coordinator's request handlers share while it runs."""

from __future__ import annotations

from dataclasses import dataclass

from onceflow.broker.groups.config import GroupConfig
from onceflow.broker.groups.group import Group
from onceflow.broker.groups.rebalance import Rebalancer
from onceflow.broker.groups.store import GroupStore


@dataclass(frozen=True, slots=True)
class RunningGroups:
    """The coordinator's groups between ``start`` and ``stop``, as ``Membership`` and ``OffsetCommits``
    both use them: the groups in memory by id, the rebalancer that moves them through rebalances, the
    state log they are stored in, and the coordinator's settings."""

    groups: dict[str, Group]
    rebalancer: Rebalancer
    store: GroupStore
    config: GroupConfig
