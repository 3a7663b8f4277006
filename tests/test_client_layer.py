"""Every gRPC stub of onceflow's services is built by a typed client on the contract's base, nowhere else.

``onceflow.contract.clients`` is the one place a status code becomes a typed error and a
channel gets its TLS and token; a stub built anywhere else (the demo's observer once called the
Results API over a plaintext channel without the token) skips both. The framework's clients live
there; an extension's service has its client on the same base (a ``ServiceClient`` subclass: the
IP-count example's ``IpCountsClient``). Tests that must send requests the clients would not build use
a client's ``stub`` property. The clients answer values (the contract's, converted in
:mod:`onceflow.contract.proto`; an example's own), so no code outside them reads a response message.
"""

from __future__ import annotations

import ast
import inspect
import typing
from collections.abc import Iterator
from pathlib import Path

from google.protobuf.message import Message

from onceflow.contract import TransactionReport, clients
from onceflow.ipcount.api import IpCountsClient
from onceflow.proto.v1 import coordinator_pb2

ROOT = Path(__file__).resolve().parent.parent
CLIENT_LAYER = ROOT / "packages" / "contract" / "src" / "onceflow" / "contract" / "clients"
GENERATED = ROOT / "packages" / "proto" / "src"


def _python_files() -> Iterator[Path]:
    for top in (ROOT / "packages", ROOT / "tests", ROOT / "bench"):
        for path in top.rglob("*.py"):
            if any(part.startswith(".") for part in path.relative_to(ROOT).parts):
                continue  # caches (.mypy_cache, .venv)
            if path.is_relative_to(CLIENT_LAYER) or path.is_relative_to(GENERATED):
                continue
            yield path


def _is_grpc_module(module: str) -> bool:
    return module.startswith("onceflow.proto") and module.endswith("_pb2_grpc")


def stub_constructions(source: str) -> list[int]:
    """Line numbers where ``source`` calls a stub class of an ``onceflow.proto`` ``*_pb2_grpc`` module
    (through the module, an imported stub class, or a name assigned one of those)."""
    tree = ast.parse(source)
    modules: set[str] = set()  # names bound to a *_pb2_grpc module
    stubs: set[str] = set()  # names bound to a stub class
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                if _is_grpc_module(node.module) and alias.name.endswith("Stub"):
                    stubs.add(alias.asname or alias.name)
                elif _is_grpc_module(f"{node.module}.{alias.name}"):
                    modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _is_grpc_module(alias.name):
                    modules.add(alias.asname or alias.name)

    # the stubs a typed client on the contract's base builds (``class XClient(ServiceClient[XStub])``)
    in_clients = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
        and any(ast.unparse(base).split("[")[0].endswith("ServiceClient") for base in node.bases)
        for inner in ast.walk(node)
    }

    def is_stub_class(expr: ast.expr) -> bool:
        if isinstance(expr, ast.Name):
            return expr.id in stubs
        if isinstance(expr, ast.Attribute) and expr.attr.endswith("Stub"):
            module = ast.unparse(expr.value)
            return module in modules or _is_grpc_module(module)
        return False

    for node in ast.walk(tree):  # ``Stub = results_pb2_grpc.ResultsStub`` makes ``Stub`` one too
        if isinstance(node, ast.Assign) and is_stub_class(node.value):
            stubs.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return sorted(
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and is_stub_class(node.func) and id(node) not in in_clients
    )


def test_the_check_finds_every_way_to_build_a_stub() -> None:
    assert stub_constructions(
        "from onceflow.proto.v1 import results_pb2_grpc\n"
        "import grpc\n"
        "stub = results_pb2_grpc.ResultsStub(grpc.insecure_channel('x'))\n"
    ) == [3]
    assert stub_constructions("from onceflow.proto.v1.connect_pb2_grpc import ConnectStub as C\nC(channel)\n") == [2]
    assert stub_constructions(
        "from onceflow.proto.v1 import coordinator_pb2_grpc as g\nStub = g.TransactionCoordinatorStub\nStub(c)\n"
    ) == [3]
    assert stub_constructions(
        "import onceflow.proto.v1.participant_pb2_grpc\nonceflow.proto.v1.participant_pb2_grpc.ParticipantStub(c)\n"
    ) == [2]
    # a type annotation, a servicer base class and grpc's own health stub are not onceflow stubs built
    assert not stub_constructions(
        "from grpc_health.v1 import health_pb2_grpc\n"
        "from onceflow.proto.v1 import results_pb2_grpc\n"
        "def f(stub: results_pb2_grpc.ResultsStub) -> None:\n"
        "    health_pb2_grpc.HealthStub(channel)\n"
        "class S(results_pb2_grpc.ResultsServicer): ...\n"
    )
    # a typed client on the contract's base builds its stub; the same call in any other class does not pass
    assert stub_constructions(
        "from onceflow.contract.clients import ServiceClient\n"
        "from onceflow.proto.v1 import ipcount_pb2_grpc\n"
        "class C(ServiceClient[ipcount_pb2_grpc.IpCountsStub]):\n"
        "    def __init__(self) -> None:\n"
        "        self._stub = ipcount_pb2_grpc.IpCountsStub(self.channel)\n"
        "class Sneaky:\n"
        "    def __init__(self) -> None:\n"
        "        self._stub = ipcount_pb2_grpc.IpCountsStub(channel)\n"
    ) == [8]


def test_no_stub_is_built_outside_the_client_layer() -> None:
    built = {
        f"{path.relative_to(ROOT)}:{line}"
        for path in _python_files()
        for line in stub_constructions(path.read_text(encoding="utf-8"))
    }
    assert not built, (
        "build the stub through onceflow.contract.clients (ResultsClient, ConnectClient, "
        "CoordinatorClient, ParticipantClient) or a typed client on its ServiceClient base "
        f"(IpCountsClient; tests: their .stub): {sorted(built)}"
    )


def _mentions_proto(annotation: object) -> bool:
    """True when ``annotation`` is, or is built from (``list[...]``, ``X | None``, ``Generator[...]``),
    a protobuf message class, or is ``Any`` (which hides one)."""
    if annotation is typing.Any:
        return True
    if isinstance(annotation, type) and issubclass(annotation, Message):
        return True
    return any(_mentions_proto(arg) for arg in typing.get_args(annotation))


def proto_answers(client_class: type) -> set[str]:
    """``Class.method`` for each public method of ``client_class`` whose return annotation is a proto type
    (the ``stub`` property, the raw stub for tests, is not a call)."""
    found = set()
    for name, member in inspect.getmembers(client_class, inspect.isfunction):
        if name.startswith("_"):
            continue
        answer = typing.get_type_hints(member).get("return")
        if _mentions_proto(answer):
            found.add(f"{client_class.__name__}.{name}")
    return found


def test_the_check_finds_a_method_answering_a_proto_message() -> None:
    class Leaky:
        def raw(self) -> coordinator_pb2.Transaction:
            raise NotImplementedError

        def raw_list(self) -> list[coordinator_pb2.Transaction] | None:
            return None

        def anything(self) -> typing.Any:
            return None

        def clean(self) -> TransactionReport:
            raise NotImplementedError

        def _private(self) -> coordinator_pb2.Transaction:
            raise NotImplementedError

    assert proto_answers(Leaky) == {"Leaky.raw", "Leaky.raw_list", "Leaky.anything"}


def test_the_clients_answer_contract_values_not_proto_messages() -> None:
    classes = [getattr(clients, name) for name in clients.__all__]
    client_classes = [c for c in classes if isinstance(c, type) and issubclass(c, clients.ServiceClient)]
    client_classes.append(IpCountsClient)  # the example's, on the same base
    assert {c.__name__ for c in client_classes} >= {
        "ConnectClient",
        "CoordinatorClient",
        "ParticipantClient",
        "ResultsClient",
    }
    answering = set().union(*(proto_answers(c) for c in client_classes))
    assert not answering, (
        "a client method answers an onceflow.v1 message: convert it to a contract value in the client "
        f"(onceflow.contract.proto): {sorted(answering)}"
    )
