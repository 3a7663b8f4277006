"""Options of the ``onceflow-2pc`` streaming sink.

The driver registers as the job's writer *before* it starts the query (see
:mod:`onceflow.spark.runner.attempt`) and passes the epoch it got here: Spark re-creates the writer
for every commit, so registering inside the sink would re-register on every batch.

===================  ============================================================================
``job``              job name (required); transaction ids are ``<job>:<batch>``
``coordinator``      ``host:port`` of the transaction coordinator, or of it and its standbys,
                     comma-separated (required)
``writerEpoch``      the epoch RegisterWriter returned to this driver (required)
``stagingRoot``      where tasks stage their Arrow IPC files: ``<stagingRoot>/<job>/<batch>/`` (required)
``rpcTimeoutMs``     deadline of CommitTransaction/AbortTransaction (default 120000)
``batchId``          batch writes only (``foreachBatch`` in update mode): the micro-batch being written
``output``           the job output these rows are (default ``results``)
``sideOutputs``      comma-separated side outputs staged by earlier steps of the query (dead letters)
``derivedOutputs``   comma-separated outputs derived from the micro-batch and staged just before it
                     (``foreachBatch``): their manifests join the batch's transaction
``stageOnly``        ``true``: stage the rows and list them in a manifest, commit nothing (the writes
                     of derived outputs; the batch commits with the main output)
``tls.ca``, ``tls.cert``, ``tls.key``  TLS (mTLS with cert and key) to the coordinator
``tls.token_file``   the bearer token file CommitTransaction and AbortTransaction send
===================  ============================================================================
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from onceflow.contract import DEFAULT_OUTPUT
from onceflow.contract.bindings import NAME
from onceflow.core.errors import InvalidConfig
from onceflow.core.settings import TlsSettings


@dataclass(frozen=True)
class SinkOptions:
    """The sink's validated options. Picklable."""

    job: str
    coordinator: str
    writer_epoch: int
    staging_root: str
    rpc_timeout_s: float = 120.0
    batch_id: int | None = None
    tls_ca: str = ""
    tls_cert: str = ""
    tls_key: str = ""
    tls_token_file: str = ""
    output: str = DEFAULT_OUTPUT
    side_outputs: tuple[str, ...] = ()
    derived_outputs: tuple[str, ...] = ()
    stage_only: bool = False

    @property
    def tls(self) -> TlsSettings:
        return TlsSettings(ca=self.tls_ca, cert=self.tls_cert, key=self.tls_key, token_file=self.tls_token_file)


def _required(options: Mapping[str, str], name: str) -> str:
    value = str(options.get(name.lower(), "")).strip()
    if not value:
        raise InvalidConfig(name, "is required by the onceflow-2pc sink")
    return value


def _names(options: Mapping[str, str], name: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in options.get(name.lower(), "").split(",") if part.strip())


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    """Validate the options given to ``writeStream.format("onceflow-2pc")``."""
    lowered = {str(k).lower(): str(v) for k, v in options.items()}
    raw_epoch = _required(lowered, "writerEpoch")
    try:
        epoch = int(raw_epoch)
    except ValueError:
        raise InvalidConfig(
            "writerEpoch", f"expected the integer epoch from RegisterWriter, got {raw_epoch!r}"
        ) from None
    if epoch < 1:
        raise InvalidConfig("writerEpoch", f"must be >= 1, got {epoch}")
    raw_timeout = lowered.get("rpctimeoutms", "120000")
    try:
        timeout_ms = int(raw_timeout)
    except ValueError:
        raise InvalidConfig("rpcTimeoutMs", f"expected milliseconds, got {raw_timeout!r}") from None
    if timeout_ms < 1:
        raise InvalidConfig("rpcTimeoutMs", f"must be >= 1, got {timeout_ms}")
    raw_batch = lowered.get("batchid", "").strip()
    if raw_batch and not raw_batch.isdigit():
        raise InvalidConfig("batchId", f"expected the micro-batch id (an integer >= 0), got {raw_batch!r}")
    output = lowered.get("output", "").strip() or DEFAULT_OUTPUT
    side_outputs = _names(lowered, "sideOutputs")
    derived_outputs = _names(lowered, "derivedOutputs")
    for name in (output, *side_outputs, *derived_outputs):
        if not NAME.match(name):
            raise InvalidConfig("output", f"output name {name!r} must match {NAME.pattern}")
    stage_only = lowered.get("stageonly", "false").strip().lower()
    if stage_only not in ("true", "false"):
        raise InvalidConfig("stageOnly", f"expected true or false, got {stage_only!r}")
    return SinkOptions(
        output=output,
        side_outputs=side_outputs,
        derived_outputs=derived_outputs,
        stage_only=stage_only == "true",
        batch_id=int(raw_batch) if raw_batch else None,
        job=_required(lowered, "job"),
        coordinator=_required(lowered, "coordinator"),
        writer_epoch=epoch,
        staging_root=_required(lowered, "stagingRoot"),
        rpc_timeout_s=timeout_ms / 1000,
        tls_ca=lowered.get("tls.ca", ""),
        tls_cert=lowered.get("tls.cert", ""),
        tls_key=lowered.get("tls.key", ""),
        tls_token_file=lowered.get("tls.token_file", ""),
    )
