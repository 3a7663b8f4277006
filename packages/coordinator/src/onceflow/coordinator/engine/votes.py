"""Votes from Prepare answers, and the reasons an abort names (participant and cause)."""

from __future__ import annotations

from typing import Final

from onceflow.contract import ParticipantVote
from onceflow.coordinator.engine.fanout import CallResult
from onceflow.coordinator.model import Transaction

#: A participant's reason or error is cut to this many characters before it is logged, so that a
#: long answer cannot make the transaction's log record too large.
MAX_CAUSE_CHARS: Final = 1024


def _cut(text: str) -> str:
    return text if len(text) <= MAX_CAUSE_CHARS else text[:MAX_CAUSE_CHARS] + "... (cut)"


def voted_yes(result: CallResult) -> bool:
    return result.ok and result.vote is not None and result.vote.vote_commit


def vote_of(result: CallResult) -> ParticipantVote:
    if voted_yes(result):
        return ParticipantVote(result.sink, prepared=True)
    if result.ok and result.vote is not None:
        return ParticipantVote(result.sink, prepared=False, error=_cut(f"voted no: {result.vote.reason}"))
    return ParticipantVote(result.sink, prepared=False, error=_cut(result.error))


def no_vote_reason(result: CallResult) -> str:
    if result.ok and result.vote is not None:
        return _cut(f"participant {result.sink!r} voted no: {result.vote.reason or 'no reason given'}")
    return _cut(f"participant {result.sink!r} did not vote: {result.error}")


def ordered(votes: tuple[ParticipantVote, ...], txn: Transaction) -> tuple[ParticipantVote, ...]:
    by_sink = {vote.sink: vote for vote in votes}
    return tuple(by_sink.get(ref.name, ParticipantVote(ref.name)) for ref in txn.participants)
