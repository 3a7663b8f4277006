"""Votes from Prepare answers, and the reasons an abort names (participant and cause)."""

from __future__ import annotations

from onceflow.coordinator.engine.fanout import CallResult
from onceflow.coordinator.model import ParticipantVote, Transaction


def voted_yes(result: CallResult) -> bool:
    return result.ok and result.vote is not None and result.vote.vote_commit


def vote_of(result: CallResult) -> ParticipantVote:
    if voted_yes(result):
        return ParticipantVote(result.sink, prepared=True)
    if result.ok and result.vote is not None:
        return ParticipantVote(result.sink, prepared=False, error=f"voted no: {result.vote.reason}")
    return ParticipantVote(result.sink, prepared=False, error=result.error)


def no_vote_reason(result: CallResult) -> str:
    if result.ok and result.vote is not None:
        return f"participant {result.sink!r} voted no: {result.vote.reason or 'no reason given'}"
    return f"participant {result.sink!r} did not vote: {result.error}"


def ordered(votes: tuple[ParticipantVote, ...], txn: Transaction) -> tuple[ParticipantVote, ...]:
    by_sink = {vote.sink: vote for vote in votes}
    return tuple(by_sink.get(ref.sink, ParticipantVote(ref.sink)) for ref in txn.participants)
