"""A job's outputs: named streaming DataFrames, their Arrow schemas, and the bindings of their sinks."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import DataFrame

from onceflow.core.contract import DEFAULT_OUTPUT, SinkBinding, SinkMode, ValueFormat
from onceflow.core.contract.bindings import NAME, InvalidBinding
from onceflow.core.errors import InvalidConfig
from onceflow.spark.job.settings import SparkJobSettings
from onceflow.spark.sink.coordinator import Participant
from onceflow.spark.sink.datasource import output_arrow_schema


@dataclass(frozen=True)
class JobOutputs:
    """What a job produced: its main output (the streaming query's rows) and the side outputs that
    earlier steps stage (such as ``dead_letters``), each with its Arrow schema."""

    name: str
    frame: DataFrame
    schemas: Mapping[str, pa.Schema]

    @property
    def side_outputs(self) -> list[str]:
        return [name for name in self.schemas if name != self.name]


def outputs_of(result: object, side_outputs: Mapping[str, pa.Schema]) -> JobOutputs:
    """Check what a job function returned: a DataFrame (output ``results``) or ``{name: DataFrame}``.

    Raises :class:`InvalidConfig` naming the output for a bad name, a non-streaming frame or an
    unsupported column type (the message names the column).
    """
    frames = {DEFAULT_OUTPUT: result} if isinstance(result, DataFrame) else result
    if not isinstance(frames, Mapping) or not frames:
        raise InvalidConfig("entrypoint", f"a job must return a DataFrame or {{name: DataFrame}}, got {result!r}")
    if len(frames) > 1:
        names = ", ".join(sorted(map(str, frames)))
        raise InvalidConfig(
            "entrypoint",
            f"the job returned several outputs ({names}); one streaming query writes one output, plus side "
            "outputs: split the job, or return one frame",
        )
    ((name, frame),) = frames.items()
    if not isinstance(name, str) or not NAME.match(name):
        raise InvalidConfig("entrypoint", f"output name {name!r} must match {NAME.pattern}")
    if not isinstance(frame, DataFrame) or not frame.isStreaming:
        raise InvalidConfig(f"outputs.{name}", "must be a streaming DataFrame built from context.source()")
    schemas = {name: output_arrow_schema(name, frame.schema), **side_outputs}
    return JobOutputs(name=name, frame=frame, schemas=schemas)


def participants_with_bindings(settings: SparkJobSettings, outputs: JobOutputs) -> list[Participant]:
    """The job's participants, each with the bindings of the outputs ``[[outputs.<name>]]`` puts there.

    Every output must be bound when any is (nothing a batch stages may be dropped); with no
    ``[outputs]`` at all the participants keep their default bindings (the IP-count results).
    """
    if not settings.outputs:
        return [Participant(p.sink, p.target) for p in settings.participants]
    unbound = [name for name in outputs.schemas if name not in settings.outputs]
    if unbound:
        raise InvalidConfig("outputs", f"output(s) {', '.join(unbound)} of the job have no [[outputs.<name>]] sink")
    unknown = [name for name in settings.outputs if name not in outputs.schemas]
    if unknown:
        raise InvalidConfig(
            "outputs",
            f"[[outputs]] names {', '.join(unknown)}, which the job does not produce "
            f"(it produces {', '.join(outputs.schemas)})",
        )
    bindings: dict[str, list[SinkBinding]] = {p.sink: [] for p in settings.participants}
    for output, sinks in settings.outputs.items():
        for i, sink in enumerate(sinks):
            try:
                bindings[sink.sink].append(
                    SinkBinding(
                        sink=sink.sink,
                        output=output,
                        table=sink.table,
                        topic=sink.topic,
                        mode=SinkMode(sink.mode),
                        keys=tuple(sink.keys),
                        value_format=ValueFormat(sink.value_format),
                        headers=tuple(sink.headers),
                        record_name=sink.record_name or f"onceflow.{settings.job.replace('-', '_')}.{output}",
                        schema=outputs.schemas[output],
                    )
                )
            except InvalidBinding as exc:
                raise InvalidConfig(f"outputs.{output}[{i}]", str(exc)) from None
    return [Participant(p.sink, p.target, tuple(bindings[p.sink])) for p in settings.participants if bindings[p.sink]]
