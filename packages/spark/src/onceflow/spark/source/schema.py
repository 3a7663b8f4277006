"""The rows of the ``onceflow-kafka`` source: one per Kafka record, as in Spark's Kafka source.

One more column than Spark's: ``end_of_input`` is true on the one kind of row that is not a record of
the input, the end of a bounded input (see :mod:`onceflow.core.end_of_input`). Jobs close their
windows with it through :func:`onceflow.spark.job.end_of_input.watermark_until_end_of_input`.
"""

from __future__ import annotations

from functools import lru_cache

import pyarrow as pa
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

SOURCE_SCHEMA = StructType(
    [
        StructField("key", BinaryType(), True),
        StructField("value", BinaryType(), True),
        StructField("topic", StringType(), True),
        StructField("partition", IntegerType(), True),
        StructField("offset", LongType(), True),
        StructField("timestamp", TimestampType(), True),
        StructField("end_of_input", BooleanType(), False),
    ]
)


@lru_cache(maxsize=1)
def arrow_schema() -> pa.Schema:
    """The Arrow schema Spark expects for record batches of :data:`SOURCE_SCHEMA` (UTC timestamps)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(SOURCE_SCHEMA, timezone="UTC")
