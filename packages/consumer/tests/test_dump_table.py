"""``onceflow results dump-table``: a Delta or Iceberg sink table as JSON lines, at any version, and
the audit's ``delta`` sink kind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from onceflow.cli.app import main as onceflow
from onceflow.contract import TransactionId
from onceflow.contract.staging import StagingWriter
from onceflow.core.toml_writer import to_toml
from onceflow.ipcount.schema import IP_COUNT_ARROW_SCHEMA, ip_count_table_binding
from onceflow.sinks.delta.settings import DeltaOptions
from onceflow.sinks.iceberg.settings import IcebergCatalogSettings, IcebergOptions
from onceflow.sinks.lakehouse.open import open_participant
from onceflow.sinks.readback import delta_reader

W0 = 1_700_000_000_000


@pytest.mark.parametrize("kind", ["delta", "iceberg"])
def test_dump_table_prints_every_version(tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str) -> None:
    options: DeltaOptions | IcebergOptions
    if kind == "delta":
        options = DeltaOptions(root=str(tmp_path / "lake"), state_dir=str(tmp_path / "state"))
    else:
        catalog = IcebergCatalogSettings(sqlite=str(tmp_path / "catalog.db"))
        options = IcebergOptions(warehouse=str(tmp_path / "wh"), state_dir=str(tmp_path / "state"), catalog=catalog)
    sink = open_participant("lake", options)
    try:
        for batch, count in enumerate((1, 5)):
            rows = [dict(window_start=W0, window_end=W0 + 5_000, ip="10.0.0.1", count=count)]
            staged = StagingWriter(str(tmp_path / "staging"), "job", batch).write("part-0", rows, IP_COUNT_ARROW_SCHEMA)
            assert sink.prepare(TransactionId("job", batch), [staged], [ip_count_table_binding("lake")]).vote_commit
            sink.commit(TransactionId("job", batch))
        versions = [version for version, txn in sink.format.history("ip_counts") if txn == "job:0"]
    finally:
        sink.close()
    config = tmp_path / "participant.toml"
    config.write_text(to_toml({"sinks": [{"name": "lake", "kind": kind, "options": options.model_dump()}]}))

    assert onceflow(["results", "dump-table", "lake", "ip_counts", "--participant-config", str(config)]) == 0
    assert [json.loads(line)["count"] for line in capsys.readouterr().out.splitlines()] == [5]
    dump_first = ["results", "dump-table", "lake", "ip_counts", "--participant-config", str(config)]
    assert onceflow([*dump_first, "--version", str(versions[0])]) == 0
    assert [json.loads(line)["count"] for line in capsys.readouterr().out.splitlines()] == [1]
    assert onceflow(["results", "dump-table", "lake", "nope", "--participant-config", str(config)]) == 1
    assert "has no table 'nope'" in capsys.readouterr().err
    assert onceflow(["results", "dump-table", "other", "ip_counts", "--participant-config", str(config)]) == 2
    assert "no sink 'other'" in capsys.readouterr().err
    if kind == "delta":
        with delta_reader("lake", str(tmp_path / "lake")) as reader:
            held = [
                (row["window_start"], row["ip"], row["count"]) for row in reader.rows(ip_count_table_binding("lake"))
            ]
        assert held == [(W0, "10.0.0.1", 5)]
