"""The states of a classic consumer group, and which transitions between them are legal."""

from __future__ import annotations

import enum

from onceflow.broker.groups.exceptions import IllegalGroupTransition


class GroupState(enum.Enum):
    """A group's state, valued by the names Kafka reports in ListGroups and DescribeGroups."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset({GroupState.EMPTY, GroupState.STABLE, GroupState.COMPLETING_REBALANCE}),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(
        {
            GroupState.EMPTY,
            GroupState.PREPARING_REBALANCE,
            GroupState.COMPLETING_REBALANCE,
            GroupState.STABLE,
            GroupState.DEAD,
        }
    ),
}


def check_transition(group_id: str, current: GroupState, target: GroupState) -> None:
    """Raise ``IllegalGroupTransition`` unless ``current -> target`` is a legal transition."""
    if current not in _VALID_PREVIOUS[target]:
        raise IllegalGroupTransition(group_id, current.value, target.value)


def can_rebalance(state: GroupState) -> bool:
    """Whether a group in ``state`` may move to PreparingRebalance."""
    return state in _VALID_PREVIOUS[GroupState.PREPARING_REBALANCE]
