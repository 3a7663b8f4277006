"""``writeStream.format("onceflow-2pc")``: the two-phase-commit sink as a Python Data Source."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamWriter, DataSourceWriter
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from onceflow.contract import check_supported
from onceflow.core.errors import InvalidConfig, UnsupportedColumnType
from onceflow.spark.sink.options import parse_sink_options
from onceflow.spark.sink.writer import TwoPhaseCommitBatchWriter, TwoPhaseCommitWriter


class TwoPhaseCommitSink(DataSource):
    """Writes the rows of one job output, of any supported schema, to the job's sinks, exactly once per batch."""

    @classmethod
    def name(cls) -> str:
        return "onceflow-2pc"

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:  # noqa: N802 - Spark's API
        options = parse_sink_options(self.options)
        return TwoPhaseCommitWriter(options, output_arrow_schema(options.output, schema))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        """Batch writes: ``foreachBatch`` in update mode, with the micro-batch id as option ``batchId``."""
        options = parse_sink_options(self.options)
        return TwoPhaseCommitBatchWriter(options, output_arrow_schema(options.output, schema))


def output_arrow_schema(output: str, schema: StructType) -> pa.Schema:
    """The Arrow schema Spark hands the output's rows in; an unsupported column is an :class:`InvalidConfig`."""
    try:
        arrow = to_arrow_schema(schema, timezone="UTC")
    except TypeError as exc:
        raise InvalidConfig(f"outputs.{output}", f"has a column type Arrow cannot carry: {exc}") from None
    try:
        check_supported(output, arrow)
    except UnsupportedColumnType as exc:
        raise InvalidConfig(f"outputs.{output}.{exc.column}", str(exc)) from None
    return arrow
