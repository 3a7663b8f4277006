"""onceflow's test scaffolding, kept out of the product packages (none of them depends on this one).

One sub-package per service it drives:

- :mod:`onceflow.testing.broker`: pytest fixtures (the ``broker``, ``apache_kafka`` and ``kafka_broker``
  fixtures, a ``pytest11`` plugin), the Apache Kafka launcher, test clients, a TCP proxy, wire helpers;
- :mod:`onceflow.testing.coordinator`: CoordinatorProcess, clusters of coordinator + participants, fakes;
- :mod:`onceflow.testing.sinks`: a real PostgreSQL server fixture (``pytest11``), ParticipantProcess;
- :mod:`onceflow.testing.consumer`: ConsumerProcess;
- :mod:`onceflow.testing.runtime`: WorkerProcess, a counter connector, a header-keeping reader;
- :mod:`onceflow.testing.logproducer`: a corpus of real-format lines and hypothesis strategies;
- :mod:`onceflow.testing.plugins`: entry points installed for a test (a distribution on ``sys.path``).
"""

from onceflow.core.grpc_fork import disable_grpc_fork_handlers

# Before the pytest plugins (onceflow.testing.*) import grpc: a test process forks after its gRPC
# calls (PySpark's JVM gateway of the session-scoped ``spark`` fixture; onceflow.core.grpc_fork).
disable_grpc_fork_handlers()
