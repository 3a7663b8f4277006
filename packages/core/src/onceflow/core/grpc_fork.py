"""gRPC's fork handlers, off in onceflow's processes unless the user turned them on.

grpcio's Linux wheels build gRPC core with its fork handlers on, while gRPC Python's own default is
off (grpc/grpc#41455). In that mixed state a child forked while gRPC's threads run (``subprocess.Popen``
with a ``preexec_fn``, as PySpark launches its JVM gateway; ``os.fork``; multiprocessing's fork
context) runs core's post-fork handler before it execs, and now and then aborts there (SIGABRT after
``epoll_wait error: Bad file descriptor``): PySpark then reports ``JAVA_GATEWAY_EXITED``. onceflow's
processes fork only to exec, so they need no fork support, and ``GRPC_ENABLE_FORK_SUPPORT=false`` turns
the handlers off. Children inherit the variable (services, Spark's JVM and its Python workers).

gRPC reads the variable once, when it is imported, so :func:`disable_grpc_fork_handlers` runs from the
``__init__`` of the packages that a process which forks after using gRPC enters first: a Spark driver
(``onceflow.spark``) and the test suite's plugins (``onceflow.testing``). A package's ``__init__`` runs
before its modules import ``grpc``. This module imports nothing of gRPC's.
"""

from __future__ import annotations

import os
import sys

#: The variable gRPC reads at import.
VARIABLE = "GRPC_ENABLE_FORK_SUPPORT"


def disable_grpc_fork_handlers() -> bool:
    """Set ``GRPC_ENABLE_FORK_SUPPORT=false`` unless it is set (a user's value is kept). True when it
    takes effect in this process too: ``grpc`` was not imported yet (children inherit it either way)."""
    os.environ.setdefault(VARIABLE, "false")
    return "grpc" not in sys.modules
