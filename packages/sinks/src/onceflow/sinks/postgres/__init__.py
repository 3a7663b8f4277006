"""The PostgreSQL sink participant (``PREPARE TRANSACTION`` / ``COMMIT PREPARED``)."""

from onceflow.sinks.postgres.participant import PostgresParticipant

__all__ = ["PostgresParticipant"]
