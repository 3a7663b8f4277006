"""``writeStream.format("onceflow-2pc")``: the two-phase-commit sink as a Python Data Source."""

from __future__ import annotations

from pyspark.sql.datasource import DataSource, DataSourceStreamWriter, DataSourceWriter
from pyspark.sql.types import StructType

from onceflow.core.errors import InvalidConfig
from onceflow.spark.sink.options import parse_sink_options
from onceflow.spark.sink.transaction import COLUMNS
from onceflow.spark.sink.writer import TwoPhaseCommitBatchWriter, TwoPhaseCommitWriter


class TwoPhaseCommitSink(DataSource):
    """Writes IpCount rows (window_start, window_end, ip, count) to the job's sinks, exactly once per batch."""

    @classmethod
    def name(cls) -> str:
        return "onceflow-2pc"

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:  # noqa: N802 - Spark's API
        _check_schema(schema)
        return TwoPhaseCommitWriter(parse_sink_options(self.options))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        """Batch writes: ``foreachBatch`` in update mode, with the micro-batch id as option ``batchId``."""
        _check_schema(schema)
        return TwoPhaseCommitBatchWriter(parse_sink_options(self.options))


def _check_schema(schema: StructType) -> None:
    missing = [c for c in COLUMNS if c not in schema.fieldNames()]
    if missing:
        raise InvalidConfig("schema", f"the onceflow-2pc sink needs columns {COLUMNS}; missing {missing}")
