"""A participant's first prepare after a start is as fast as the next ones.

pyarrow imports pandas (over a second here) the first time it converts Python objects or runs a
``group_by``. A participant restarted by a supervisor must not pay that inside the first prepare
after it, while the coordinator's prepare timeout runs: the prepare path stays pandas-free.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent(
    """
    import sys
    from onceflow.core.avro import IpCount
    from onceflow.ipcount.schema import ip_count_table_binding
    from onceflow.contract.staging import StagedFile
    from onceflow.contract import TransactionId
    from onceflow.sinks.sqlite import SqliteParticipant

    staged = StagedFile(**{STAGED})
    sink = SqliteParticipant("sqlite", sys.argv[1])
    binding = ip_count_table_binding("sqlite")
    result = sink.prepare(TransactionId("job", 0), [staged], [binding])
    assert result.vote_commit, result
    sink.commit(TransactionId("job", 0), [binding])
    print("pandas" in sys.modules)
    """
)


def test_the_first_upsert_prepare_of_a_process_does_not_import_pandas(tmp_path: Path) -> None:
    from onceflow.contract.staging import StagingWriter
    from onceflow.core.avro import IpCount
    from onceflow.ipcount.schema import IP_COUNT_ARROW_SCHEMA

    rows = [IpCount(window_start=0, window_end=5000, ip=f"10.0.0.{i % 7}", count=i) for i in range(100)]
    staged = StagingWriter(str(tmp_path / "staging"), "job", 0).write("part-0", rows, IP_COUNT_ARROW_SCHEMA)
    script = SCRIPT.replace("{STAGED}", repr(staged.__dict__))
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "results.db")], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "False", "the first prepare imported pandas"
