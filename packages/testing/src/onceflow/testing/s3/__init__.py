"""An S3 API store for tests: S3Proxy from Maven Central (``make setup``), its launcher and fixtures.

- :class:`S3ProxyProcess` (:mod:`.process`): S3Proxy on its filesystem backend, 127.0.0.1, a free port,
  its own credentials and buckets; ``kill -9`` and restarts on the same port and objects.
- ``s3proxy`` / ``s3proxy_factory`` (:mod:`.fixtures`, a pytest11 plugin).
- :func:`hadoop_aws_classpath` (:mod:`.hadoop_aws`): the S3A connector ``make setup`` resolved, for a
  Spark checkpoint on S3Proxy.
"""

from onceflow.testing.s3.hadoop_aws import hadoop_aws_classpath
from onceflow.testing.s3.process import CLIENT_CHECKSUM_ENV, S3ProxyJarsMissing, S3ProxyProcess, find_s3proxy_libs

__all__ = [
    "CLIENT_CHECKSUM_ENV",
    "S3ProxyJarsMissing",
    "S3ProxyProcess",
    "find_s3proxy_libs",
    "hadoop_aws_classpath",
]
