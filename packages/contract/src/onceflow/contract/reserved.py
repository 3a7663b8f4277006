"""Tables and topics no binding may write: onceflow's own bookkeeping (docs/design.md, "Security").

A sink recognises a committed batch by its own records (the ``onceflow_commits`` table, the Kafka
sink's marker topic), and the results consumer keeps its offsets beside its rows. A job whose
output were written there would corrupt them: another job's batches would read as committed while
none of their rows reach the sink. So a binding naming one is refused when it is made (the Spark
runner, from ``[[outputs]]``) and again by the participant (a client may send anything):

- tables: every name starting with ``onceflow_`` (a sink's ``onceflow_commits``, ``onceflow_pending``),
  the consumer's :data:`CONSUMER_BOOKKEEPING_TABLES` and the Iceberg sink's SQL catalog
  (:data:`ICEBERG_CATALOG_TABLES`, which may share the PostgreSQL sink's database), compared
  without case as SQL does;
- topics: onceflow's internal ``_onceflow_*`` topics and Kafka's ``__*`` ones
  (:func:`onceflow.core.topics.is_internal`), plus the topics a participant names as its own
  (a Kafka sink's configured commits topic).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from onceflow.contract.bindings import InvalidBinding, SinkBinding
from onceflow.core.topics import is_internal

#: The prefix of every table a sink keeps for itself.
INTERNAL_TABLE_PREFIX: Final = "onceflow_"
#: The results consumer's own tables: stored offsets and the schemas of its tables.
CONSUMER_BOOKKEEPING_TABLES: Final = ("consumer_offsets", "consumer_tables")
#: pyiceberg's SQL catalog tables (the Iceberg sink's catalog, in a SQLite or PostgreSQL database).
ICEBERG_CATALOG_TABLES: Final = ("iceberg_tables", "iceberg_namespace_properties")


def internal_name(binding: SinkBinding, *, own_topics: Iterable[str] = ()) -> str | None:
    """Why ``binding`` writes onceflow's own bookkeeping (naming the table or topic), or None."""
    table = binding.table.casefold()
    reserved = (*CONSUMER_BOOKKEEPING_TABLES, *ICEBERG_CATALOG_TABLES)
    if table.startswith(INTERNAL_TABLE_PREFIX) or table in reserved:
        return f"table {binding.table!r} is onceflow's own bookkeeping (tables {INTERNAL_TABLE_PREFIX}* and " \
            f"{', '.join(reserved)} are reserved)"  # fmt: skip
    if binding.topic and (is_internal(binding.topic) or binding.topic in set(own_topics)):
        return f"topic {binding.topic!r} is onceflow's own bookkeeping (internal topics _onceflow_* and __* " \
            "and the sink's own topics are reserved)"  # fmt: skip
    return None


def refuse_internal(binding: SinkBinding, *, own_topics: Iterable[str] = ()) -> None:
    """Raise :class:`InvalidBinding` naming the table or topic when ``binding`` writes onceflow's own."""
    reason = internal_name(binding, own_topics=own_topics)
    if reason is not None:
        raise InvalidBinding(f"binding {binding.describe()}: {reason}; bind the output to another table or topic")
