"""onceflow.spark: the Spark compute worker.

Sub-packages, one concept each:

- :mod:`onceflow.spark.source`: the ``onceflow-kafka`` streaming source (PySpark Python Data Source);
- :mod:`onceflow.spark.sink`: the ``onceflow-2pc`` streaming sink (staging + coordinator 2PC);
- :mod:`onceflow.spark.job`: the IP-count query, its settings, decoding and dead letters;
- :mod:`onceflow.spark.runner`: the driver: session, restart loop, progress listener, CLI.

:mod:`onceflow.spark.submit` is the spark-submit application file.
"""

from onceflow.core.grpc_fork import disable_grpc_fork_handlers

# Before any of this package's modules imports grpc: PySpark forks its JVM gateway (onceflow.core.grpc_fork).
disable_grpc_fork_handlers()

__all__: list[str] = []
