"""gRPC's fork handlers are off in onceflow's processes (onceflow.core.grpc_fork).

With grpcio's default, a child forked by ``Popen(preexec_fn=...)`` while gRPC calls run aborts now and
then before it execs (SIGABRT, ``epoll_wait error: Bad file descriptor`` on its stderr): the test
suite's Spark fixture saw PySpark's JVM gateway "exit" that way. A real gRPC server and client in a
fresh interpreter, calls running on a thread while the main thread forks and execs /bin/true.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

FORKS = 300

PROGRAM = textwrap.dedent(
    """
    import os, signal, subprocess, sys, threading
    from concurrent import futures

    from onceflow.core.grpc_fork import disable_grpc_fork_handlers

    took_effect = disable_grpc_fork_handlers()
    import grpc
    from grpc_health.v1 import health, health_pb2, health_pb2_grpc

    server = grpc.server(futures.ThreadPoolExecutor(4))
    health_pb2_grpc.add_HealthServicer_to_server(health.HealthServicer(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    stub = health_pb2_grpc.HealthStub(grpc.insecure_channel(f"127.0.0.1:{port}"))
    stop = threading.Event()

    def call() -> None:
        while not stop.is_set():
            stub.Check(health_pb2.HealthCheckRequest(), timeout=30)

    caller = threading.Thread(target=call)
    caller.start()
    failed = []
    for _ in range(int(sys.argv[1])):
        child = subprocess.Popen(
            ["/bin/true"], stderr=subprocess.PIPE, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)
        )
        _, err = child.communicate()
        if child.returncode or err:
            failed.append((child.returncode, err.decode(errors="replace")[:200]))
    stop.set()
    caller.join()
    server.stop(0)
    print(took_effect, os.environ["GRPC_ENABLE_FORK_SUPPORT"], len(failed), failed[:3])
    """
)


def _run(env: dict[str, str], forks: int) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(forks)], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split(maxsplit=3)


def test_children_forked_while_grpc_calls_run_all_exec() -> None:
    env = {k: v for k, v in os.environ.items() if k != "GRPC_ENABLE_FORK_SUPPORT"}
    took_effect, value, failed, examples = _run(env, FORKS)
    assert (took_effect, value) == ("True", "false")
    assert failed == "0", f"{failed} of {FORKS} forked children failed before exec: {examples}"


def test_a_value_the_user_set_is_kept() -> None:
    took_effect, value, _, _ = _run({**os.environ, "GRPC_ENABLE_FORK_SUPPORT": "true"}, 0)
    assert (took_effect, value) == ("True", "true")


def test_the_test_suites_own_processes_run_without_the_handlers() -> None:
    # onceflow.testing's plugins set it before they import grpc; its children inherit it.
    assert os.environ.get("GRPC_ENABLE_FORK_SUPPORT") == "false"
