"""docs/cluster.md's "Running the example jobs on a standalone cluster", run as written.

Its bash blocks run in order as one script (``onceflow.testing.runbook``, as for
docs/running-the-services.md): a Spark standalone master and worker from PySpark's distribution
with a shared secret, the onceflow services, and the IP-count job submitted with spark-submit,
against a real Apache Kafka, staging every batch on S3Proxy. The page's ports are mapped to free
ones, its Kafka address to the test's broker, and the store's AWS variables are in the script's
environment. The audit's verdict decides, and the job must have run on the cluster.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from onceflow.testing.runbook import bash_blocks, free_ports, run_page, section
from onceflow.testing.s3 import S3ProxyProcess

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "cluster.md"
SECTION = "Running the example jobs on a standalone cluster"
#: Every port of the section and of the services' configs but Kafka's (9092, mapped to the test's broker).
PORTS = (7077, 7078, 8080, 8081, 7100, 7101, 7200, 8083, 9101, 9461, 9462, 9463, 9466)


def _blocks() -> list[str]:
    return bash_blocks(section(DOC.read_text(), SECTION))


def test_the_section_has_the_steps() -> None:
    script = "\n".join(_blocks())
    commands = (
        "deploy.master.Master", "deploy.worker.Worker", "spark.authenticate.secret", "onceflow topics create",
        "onceflow txn init-log", "onceflow coordinator", "onceflow participant", "onceflow consumer", "spark-submit",
        "checkpoint_shared = true", 'staging_root = "$STAGING"', "ALLOWED_SCHEMES", "onceflow connect-worker",
        "onceflow audit",
    )  # fmt: skip
    for command in commands:
        assert command in script


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_ip_count_job_runs_on_a_standalone_cluster_as_the_page_says(
    tmp_path: Path, apache_kafka_factory: Callable[..., Any], s3proxy: S3ProxyProcess
) -> None:
    kafka = apache_kafka_factory()
    s3proxy.create_bucket("onceflow-staging")
    ports = {**dict(zip(PORTS, free_ports(len(PORTS)), strict=True)), 9092: kafka.port}
    # the store's AWS variables are in the environment of every command, as the page says
    code, output = run_page(_blocks(), tmp_path, ROOT / "services", ports, timeout=840, env=s3proxy.client_env())
    (tmp_path / "page.log").write_text(output)  # the whole output, for a failure's diagnosis
    run = tmp_path / "run"
    audit = output[output.find("truth: file") :]
    assert code == 0, output[-6000:] + (run / "driver.log").read_text(errors="replace")[-6000:]
    assert "accounting: EXACT" in audit, audit[-4000:]
    assert re.search(r"overall: EXACT \(3 sinks\)", audit), audit[-4000:]
    # the executors ran on the worker, in JVMs of their own, and the driver knew the cluster's master
    assert list((run / "worker").glob("app-*/*/stderr")), "no executor ran on the worker"
    assert f"master=spark://127.0.0.1:{ports[7077]}" in (run / "driver.log").read_text(errors="replace")
    assert (run / "spark.secret").stat().st_mode & 0o077 == 0
