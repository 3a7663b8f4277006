"""The Kafka sink's journal of prepared transactions (the one implementation lives in ``base``)."""

from onceflow.sinks.base.journal import PreparedJournal

__all__ = ["PreparedJournal"]
