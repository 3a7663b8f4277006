"""A job's outputs: named streaming DataFrames, their Arrow schemas, and the bindings of their sinks."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pyarrow as pa
from pyspark.sql import DataFrame

from onceflow.contract import DEFAULT_OUTPUT, ParticipantRef, SinkBinding, SinkMode, ValueFormat, refuse_internal
from onceflow.contract.bindings import NAME, InvalidBinding
from onceflow.core.errors import InvalidConfig
from onceflow.spark.job.settings import SparkJobSettings
from onceflow.spark.sink.datasource import output_arrow_schema
from onceflow.spark.sink.foreach_batch import Derive


@dataclass(frozen=True)
class JobOutputs:
    """What a job produced, each output with its Arrow schema:

    - the main output (:attr:`name`): the streaming query's rows (:attr:`frame`);
    - derived outputs (:attr:`derived`): functions of each micro-batch of the main output, written
      in the same transaction (``foreachBatch``);
    - side outputs that earlier steps stage (such as ``dead_letters``).
    """

    name: str
    frame: DataFrame
    schemas: Mapping[str, pa.Schema]
    derived: Mapping[str, Derive] = field(default_factory=dict)

    @property
    def side_outputs(self) -> list[str]:
        return [name for name in self.schemas if name != self.name and name not in self.derived]


def outputs_of(result: object, side_outputs: Mapping[str, pa.Schema]) -> JobOutputs:
    """Check what a job function returned: a streaming DataFrame (output ``results``), or
    ``{name: streaming DataFrame or function}`` with exactly one streaming DataFrame (the main
    output) and, for every other output, a function from a micro-batch of it (a batch DataFrame) to
    that output's rows.

    Raises :class:`InvalidConfig` naming the output for a bad name, a second streaming frame, a
    function that does not return a DataFrame, or an unsupported column type (naming the column).
    """
    values = {DEFAULT_OUTPUT: result} if isinstance(result, DataFrame) else result
    if not isinstance(values, Mapping) or not values:
        raise InvalidConfig(
            "entrypoint", f"a job must return a streaming DataFrame or {{name: DataFrame or function}}, got {result!r}"
        )
    for name in values:
        if not isinstance(name, str) or not NAME.match(name):
            raise InvalidConfig("entrypoint", f"output name {name!r} must match {NAME.pattern}")
        if name in side_outputs:
            raise InvalidConfig(f"outputs.{name}", f"{name!r} is the side output of a step the job uses")
    streams = [name for name, value in values.items() if isinstance(value, DataFrame) and value.isStreaming]
    if len(streams) > 1:
        raise InvalidConfig(
            "entrypoint",
            f"the job returned several streaming outputs ({', '.join(streams)}); one streaming query writes "
            "one stream: return the others as functions of its micro-batches, or split the job",
        )
    if not streams:
        first = next(iter(values))
        raise InvalidConfig(f"outputs.{first}", "must be a streaming DataFrame built from context.source()")
    (name,) = streams
    frame = values[name]
    assert isinstance(frame, DataFrame)
    schemas = {name: output_arrow_schema(name, frame.schema)}
    derived: dict[str, Derive] = {}
    empty_batch = frame.sparkSession.createDataFrame([], frame.schema) if len(values) > 1 else None
    for other, derive in values.items():
        if other == name:
            continue
        if not callable(derive) or isinstance(derive, DataFrame):
            raise InvalidConfig(
                f"outputs.{other}",
                f"must be a function of the micro-batch of {name!r} (DataFrame -> DataFrame), got {derive!r}",
            )
        try:
            rows = derive(empty_batch)
        except Exception as exc:  # the user's function, run once on an empty micro-batch
            raise InvalidConfig(f"outputs.{other}", f"failed on an empty micro-batch of {name!r}: {exc}") from None
        if not isinstance(rows, DataFrame) or rows.isStreaming:
            raise InvalidConfig(f"outputs.{other}", f"must return a batch DataFrame, returned {rows!r}")
        schemas[other] = output_arrow_schema(other, rows.schema)
        derived[other] = derive
    return JobOutputs(name=name, frame=frame, schemas={**schemas, **side_outputs}, derived=derived)


def bindings_of(settings: SparkJobSettings, schemas: Mapping[str, pa.Schema]) -> dict[str, list[SinkBinding]]:
    """The bindings ``[[outputs.<name>]]`` declares, per participant sink, with each output's schema.

    Every output must be bound when any is (nothing a batch stages may be dropped), every bound
    output must be one the job produces, and no binding may write onceflow's own bookkeeping tables
    or topics (:mod:`onceflow.contract.reserved`); InvalidConfig names the output otherwise.
    """
    unbound = [name for name in schemas if name not in settings.outputs]
    if unbound:
        raise InvalidConfig("outputs", f"output(s) {', '.join(unbound)} of the job have no [[outputs.<name>]] sink")
    unknown = [name for name in settings.outputs if name not in schemas]
    if unknown:
        raise InvalidConfig(
            "outputs",
            f"[[outputs]] names {', '.join(unknown)}, which the job does not produce "
            f"(it produces {', '.join(schemas)})",
        )
    bindings: dict[str, list[SinkBinding]] = {p.sink: [] for p in settings.participants}
    for output, sinks in settings.outputs.items():
        for i, sink in enumerate(sinks):
            try:
                binding = SinkBinding(
                    sink=sink.sink,
                    output=output,
                    table=sink.table,
                    topic=sink.topic,
                    mode=SinkMode(sink.mode),
                    keys=tuple(sink.keys),
                    value_format=ValueFormat(sink.value_format),
                    headers=tuple(sink.headers),
                    record_name=sink.record_name or f"onceflow.{settings.job.replace('-', '_')}.{output}",
                    schema=schemas[output],
                )
                refuse_internal(binding)
            except InvalidBinding as exc:
                raise InvalidConfig(f"outputs.{output}[{i}]", str(exc)) from None
            bindings[sink.sink].append(binding)
    return bindings


def participants_with_bindings(settings: SparkJobSettings, outputs: JobOutputs) -> list[ParticipantRef]:
    """The job's participants, each with the bindings of the outputs ``[[outputs.<name>]]`` puts there
    (:func:`bindings_of`; the settings refuse an exactly-once job without ``[outputs]``). A sink with
    ``targets`` is one participant per shard; a sink no output goes to is left out.
    """
    bindings = bindings_of(settings, outputs.schemas)
    return [ref for p in settings.participants if bindings[p.sink] for ref in p.refs(tuple(bindings[p.sink]))]
