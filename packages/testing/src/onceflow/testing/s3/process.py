"""S3Proxy (an S3 API server, ``org.gaul:s3proxy``) on its filesystem backend, as a child process.

It runs from the jars ``make setup`` (``make s3proxy``) copies from Maven Central into
``.cache/s3proxy/<version>/libs`` (``tools/s3proxy/pom.xml``). :class:`S3ProxyProcess` is a
:class:`~onceflow.core.process.ServiceProcess`: ``start()`` returns once it accepts connections (about
a second), ``kill()`` is a real ``kill -9``, and a restart serves the same objects on the same port
with the same credentials.

``start()`` steps:
    1. On the first start: pick a free port on ``host`` and create the buckets (a bucket of the
       filesystem backend is a directory under the data dir).
    2. Write ``s3proxy.conf`` (endpoint, AWS v2/v4 authorization with this instance's own identity
       and credential, the filesystem backend on ``data_dir/objects``) and spawn
       ``java -cp 'libs/*' org.gaul.s3proxy.Main --properties s3proxy.conf``.
    3. Wait until the endpoint accepts a TCP connection (Jetty listens once S3Proxy serves).

Its filesystem backend is jclouds' ``filesystem`` (S3Proxy calls it deprecated in favour of
``filesystem-nio2``, which answers HEAD for a prefix that has objects under it as if it were an object,
and so breaks Hadoop's S3A connector).
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from onceflow.core.process import ServiceProcess, free_port
from onceflow.core.service import Readiness
from onceflow.testing.jars import FAST_START_JVM_OPTIONS, JarsMissing, fetched_libs, java_command

POM: Final = Path("tools/s3proxy/pom.xml")
S3PROXY_HOME_ENV: Final = "ONCEFLOW_S3PROXY_HOME"
"""Environment variable naming a folder whose ``libs/`` holds the S3Proxy jars (overrides the cache)."""

#: The AWS SDKs' newer default checksums (trailing CRCs on uploads, checked responses), which S3Proxy
#: 2.6 does not speak; clients of S3-compatible stores that lack them set these standard variables.
CLIENT_CHECKSUM_ENV: Final[Mapping[str, str]] = {
    "AWS_REQUEST_CHECKSUM_CALCULATION": "when_required",
    "AWS_RESPONSE_CHECKSUM_VALIDATION": "when_required",
}


class S3ProxyJarsMissing(JarsMissing):
    """The S3Proxy jars are not where ``make setup`` puts them."""


def find_s3proxy_libs() -> Path:
    """``$ONCEFLOW_S3PROXY_HOME/libs``, else ``.cache/s3proxy/<version>/libs`` of the checkout."""
    home = os.environ.get(S3PROXY_HOME_ENV)
    if home:
        return Path(home) / "libs"
    return fetched_libs("s3proxy", title="S3Proxy", version_property="s3proxy.version", missing=S3ProxyJarsMissing)


class S3ProxyProcess(ServiceProcess):
    """S3Proxy serving ``buckets`` from ``data_dir`` on ``host``, with its own random credentials.

    :attr:`endpoint_url`, :attr:`access_key_id` and :attr:`secret_access_key` say how to reach it;
    :meth:`client_env` and :meth:`s3_settings` hand them to a onceflow service as the standard AWS
    variables or as a ``[staging.s3]`` section.
    """

    NAME = "S3Proxy"
    LOG_FILE = "s3proxy.log"
    READY_FILE = None
    READY_POLL_INTERVAL = 0.02

    def __init__(
        self,
        data_dir: Path,
        port: int = 0,
        *,
        host: str = "127.0.0.1",
        buckets: Sequence[str] = ("onceflow",),
        heap: str = "256m",
        libs: Path | None = None,
        startup_timeout: float = 30.0,
        stop_timeout: float = 10.0,
    ) -> None:
        super().__init__(data_dir, port=port, startup_timeout=startup_timeout, stop_timeout=stop_timeout)
        self.host = host
        self.buckets = tuple(buckets)
        self.access_key_id = f"onceflow-{secrets.token_hex(4)}"
        self.secret_access_key = secrets.token_urlsafe(24)
        self._heap = heap
        self._libs = libs

    @property
    def data_dir(self) -> Path:
        return self.work_dir

    @property
    def objects_dir(self) -> Path:
        """Where the filesystem backend keeps the buckets (one directory each) and their objects."""
        return self.work_dir / "objects"

    @property
    def endpoint_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def bucket(self) -> str:
        """The first bucket."""
        return self.buckets[0]

    def uri(self, prefix: str, bucket: str | None = None) -> str:
        """``s3://<bucket>/<prefix>``."""
        return f"s3://{bucket or self.bucket}/{prefix.strip('/')}"

    def client_env(self) -> dict[str, str]:
        """The standard AWS variables of a client of this store (checksum settings included)."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint_url,
            "AWS_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": self.access_key_id,
            "AWS_SECRET_ACCESS_KEY": self.secret_access_key,
            **CLIENT_CHECKSUM_ENV,
        }

    def s3_settings(self) -> dict[str, object]:
        """A ``[staging.s3]`` section for this store (the checksum variables still come from the
        environment: :data:`CLIENT_CHECKSUM_ENV`)."""
        return {
            "endpoint_url": self.endpoint_url,
            "region": "us-east-1",
            "access_key_id": self.access_key_id,
            "secret_access_key": self.secret_access_key,
        }

    def create_bucket(self, name: str) -> None:
        """Create bucket ``name`` (also while S3Proxy runs: the backend reads its directories)."""
        (self.objects_dir / name).mkdir(parents=True, exist_ok=True)

    def delete_bucket(self, name: str) -> None:
        shutil.rmtree(self.objects_dir / name, ignore_errors=True)

    def command(self) -> Sequence[str]:
        # Step 1
        if self._port == 0:
            self._port = free_port(self.host)
            for bucket in self.buckets:
                self.create_bucket(bucket)
        # Step 2
        properties = {
            "s3proxy.endpoint": self.endpoint_url,
            "s3proxy.authorization": "aws-v2-or-v4",
            "s3proxy.identity": self.access_key_id,
            "s3proxy.credential": self.secret_access_key,
            "jclouds.provider": "filesystem",
            "jclouds.filesystem.basedir": str(self.objects_dir),
        }
        config = self.work_dir / "s3proxy.conf"
        config.write_text("".join(f"{key}={value}\n" for key, value in properties.items()))
        config.chmod(0o600)
        return java_command(
            "org.gaul.s3proxy.Main",
            "--properties",
            str(config),
            libs=self._libs or find_s3proxy_libs(),
            heap=self._heap,
            options=(
                *FAST_START_JVM_OPTIONS,
                "-Xshare:auto",
                # slf4j-simple to stdout (the log file): S3Proxy routes System.err into its own logger.
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                "-Dorg.slf4j.simpleLogger.logFile=System.out",
            ),
            title="S3Proxy",
            missing=S3ProxyJarsMissing,
        )

    def probe_ready(self, pid: int) -> Readiness | None:
        # Step 3
        try:
            with socket.create_connection((self.host, self._port), timeout=0.5):
                return Readiness(port=self._port)
        except OSError:
            return None
