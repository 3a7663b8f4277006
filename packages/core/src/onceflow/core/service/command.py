"""The foreground ``onceflow <service>`` command, built from a package's declaration: :class:`ServiceCommand`.

Every service command (broker, coordinator, participant, consumer, connect-worker, the Spark
runner) is one :class:`ServiceCommand` in its package's ``command.py``, so their options, messages
and exit codes are the same: 0 after SIGTERM/SIGINT, 2 (:data:`EXIT_CONFIG`) with
``onceflow <command>: <error>`` on stderr for a bad configuration or an unreachable dependency, and
the service's own codes for the rest. The declaration names its service by import path
(``"package.module:factory"``), imported only when the command runs, so building the ``onceflow``
parser imports no service; the settings model is what the factory takes (the annotation of its first
parameter), so the two cannot disagree.
"""

from __future__ import annotations

import argparse
import inspect
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from pkgutil import resolve_name
from typing import Any, TypeVar

from onceflow.core.errors import OnceflowError
from onceflow.core.exposure import listeners_of, refuse_unauthenticated
from onceflow.core.grpc.auth import check_token_files
from onceflow.core.logging import configure_logging
from onceflow.core.service.base import EXIT_CONFIG, Service, ServiceStartFailed
from onceflow.core.service.loop import serve_until_signalled
from onceflow.core.settings import Settings, load_settings

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Flag:
    """A command-line argument that overrides one setting of the loaded settings.

    ``setting`` is the dotted path of the setting (``log.level``); ``extend`` appends the values to the
    setting's list instead of replacing it. An argument left unset (None, or no positional values)
    leaves the config file and the environment in charge.
    """

    names: tuple[str, ...]
    setting: str
    options: Mapping[str, Any] = field(default_factory=dict)
    extend: bool = False

    @property
    def dest(self) -> str:
        """The attribute of the parsed arguments (argparse's rule: the first long name, or the positional)."""
        if "dest" in self.options:
            return str(self.options["dest"])
        long = next((name for name in self.names if name.startswith("--")), self.names[0])
        return long.lstrip("-").replace("-", "_")


def flag(*names: str, setting: str, extend: bool = False, **options: Any) -> Flag:
    """A :class:`Flag`: ``names`` and ``options`` as for ``ArgumentParser.add_argument``."""
    return Flag(names, setting, options, extend)


def add_command(subparsers: Any, name: str, *, help: str, description: str | None) -> argparse.ArgumentParser:
    """Add ``name`` under ``subparsers``: ``help`` in the list of commands, ``description`` (the command
    module's docstring) as ``--help`` shows it, line breaks kept. Every ``onceflow`` command is added so."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        name, help=help, description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    return parser


@dataclass(frozen=True, kw_only=True)
class ServiceCommand:
    """One service command, as its package declares it.

    Attributes:
        name: the subcommand (``onceflow <name>``) and the prefix of its error lines.
        help: the one-line help in ``onceflow --help``.
        description: the text of ``onceflow <name> --help`` (the command module's docstring).
        service: ``"module:factory"``, a :class:`Service` class or a function taking the settings
            and returning the service. Its first parameter's annotation is the :class:`Settings`
            model loaded from ``--config`` and the environment.
        config_file: the shipped config file that ``--config``'s help points to
            (``services/<name>/<name>.toml`` unless given).
        flags: the command's own flags, each overriding a setting.
        unreachable: ``"module:Error"`` kinds that mean a dependency cannot be reached at start
            (exit 2, like an :class:`OnceflowError`).
        commands: functions ``register(subparsers)`` adding admin subcommands under this one.
    """

    name: str
    help: str
    description: str
    service: str
    config_file: str = ""
    flags: Sequence[Flag] = ()
    unreachable: Sequence[str] = ()
    commands: Sequence[Callable[[Any], None]] = ()

    def register(self, subparsers: Any) -> None:
        """Entry point of the ``onceflow.cli`` group: adds ``onceflow <name>``."""
        self.add_arguments(add_command(subparsers, self.name, help=self.help, description=self.description))

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """``--config``, ``--ready-file``, the command's flags, then its admin subcommands."""
        shipped = self.config_file or f"services/{self.name}/{self.name}.toml"
        parser.add_argument("--config", metavar="FILE", help=f"TOML config file (see {shipped})")
        parser.add_argument(
            "--ready-file",
            metavar="FILE",
            type=Path,
            help="write {pid, port, metrics_port} as JSON here once serving (for supervisors and tests)",
        )
        for each in self.flags:
            parser.add_argument(*each.names, **each.options)
        parser.set_defaults(func=self.run)
        if self.commands:
            subparsers = parser.add_subparsers(title=f"{self.name} commands", metavar="COMMAND")
            for register in self.commands:
                register(subparsers)

    def main(self, prog: str, argv: Sequence[str] | None = None) -> int:
        """``python -m <package>`` (``prog``): parse ``argv`` and run, or run the admin subcommand named."""
        parser = argparse.ArgumentParser(
            prog=prog, description=self.description, formatter_class=argparse.RawDescriptionHelpFormatter
        )
        self.add_arguments(parser)
        args = parser.parse_args(argv)
        code: int = args.func(args)
        return code

    def run(self, args: argparse.Namespace) -> int:
        """Load the settings (file, environment, flags) and serve; returns the process exit code."""
        return run_service(
            self.name,
            lambda: self._load(args),
            self._build,
            ready_file=args.ready_file,
            fatal=(OnceflowError, *(_resolve_class(name, BaseException) for name in self.unreachable)),
        )

    def settings_model(self) -> type[Settings]:
        """The :class:`Settings` model the service factory takes: its first parameter's annotation."""
        factory = resolve_name(self.service)
        parameters = list(inspect.signature(factory, eval_str=True).parameters.values())
        model = parameters[0].annotation if parameters else None
        if not (isinstance(model, type) and issubclass(model, Settings)):
            raise TypeError(f"{self.service} must take a Settings model as its first parameter, annotated")
        return model

    def _load(self, args: argparse.Namespace) -> Settings:
        model = self.settings_model()
        given = [(each, value) for each in self.flags if (value := getattr(args, each.dest, None)) not in (None, [])]
        # The flags apply before validation: a setting the file leaves out may come from the command line.
        return load_settings(
            model,
            args.config,
            overrides={each.setting: value for each, value in given},
            appending=frozenset(each.setting for each, _ in given if each.extend),
        )

    def _build(self, settings: Settings) -> Service:
        factory = resolve_name(self.service)
        service = factory(settings)
        if not isinstance(service, Service):
            raise TypeError(f"{self.service} made a {type(service).__name__}, not a Service")
        return service


def _resolve_class(name: str, base: type[T]) -> type[T]:
    """The class ``"module:Name"`` names, which must be ``base`` or a subclass of it."""
    found = resolve_name(name)
    if not (isinstance(found, type) and issubclass(found, base)):
        raise TypeError(f"{name} is not a {base.__name__}")
    return found


def run_service(
    command: str,
    load: Callable[[], Settings],
    build: Callable[[Any], Service],
    *,
    ready_file: Path | None,
    fatal: tuple[type[BaseException], ...] = (OnceflowError,),
) -> int:
    """Run a service in the foreground; returns the process exit code.

    Steps:
        1. Load the settings (``load``: file, environment, flags) and check that every listener
           they declare off loopback authenticates its clients (:mod:`onceflow.core.exposure`;
           ``ONCEFLOW_INSECURE=1`` allows it), and that every token file they name can be read; an
           :class:`OnceflowError` or a ``ValueError`` (a bad flag value) prints
           ``onceflow <command>: <error>`` and returns 2, before the service starts anything.
        2. Configure logging to stderr as the settings' ``log`` section says.
        3. Build the service and serve it until signalled
           (:func:`~onceflow.core.service.serve_until_signalled`). A :class:`ServiceStartFailed`
           prints its reason and returns its exit code; an error of the ``fatal`` kinds (an
           unreachable dependency) prints it and returns 2.
        4. A service that ended with a failure prints its reason; return its exit code.
    """
    # Step 1
    try:
        settings = load()
        refuse_unauthenticated(listeners_of(settings))
        check_token_files(settings)
    except (OnceflowError, ValueError) as exc:
        print(f"onceflow {command}: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    # Step 2
    configure_logging(level=settings.log.level, fmt=settings.log.format)
    # Step 3
    try:
        status = serve_until_signalled(build(settings), ready_file)
    except ServiceStartFailed as exc:
        print(f"onceflow {command}: {exc}", file=sys.stderr)
        return exc.exit_code
    except fatal as exc:
        print(f"onceflow {command}: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    # Step 4
    if status.reason is not None:
        print(f"onceflow {command}: {status.reason}", file=sys.stderr)
    return status.code
