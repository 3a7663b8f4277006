"""Load a job's function from ``package.module:function`` or ``path/to/job.py:function``."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from onceflow.spark.api.context import JobContext

#: What a job is: a function of its context returning a DataFrame or a mapping of named DataFrames.
JobFunction = Callable[["JobContext"], Any]
#: A job file ``path/to/name.py`` is the module ``onceflow_job_name`` (never the name of an installed one).
JOB_MODULE_PREFIX = "onceflow_job_"


def job_file(spec: str) -> Path | None:
    """The job file a ``path/to/job.py:function`` entry point names (resolved), None for ``module:function``."""
    target = spec.rpartition(":")[0]
    return Path(target).expanduser().resolve() if target.endswith(".py") else None


def job_module_name(path: Path) -> str:
    """The module name a job file is loaded (and shipped to the executors) as."""
    return f"{JOB_MODULE_PREFIX}{path.stem}"


def load_entrypoint(spec: str) -> JobFunction:
    """The function ``spec`` names; ValueError names what could not be found."""
    target, sep, name = spec.rpartition(":")
    if not sep or not target or not name.isidentifier():
        raise ValueError(f"entry point {spec!r} must be module:function or path/to/job.py:function")
    path = job_file(spec)
    if path is not None:
        if not path.is_file():
            raise ValueError(f"entry point {spec!r}: no file {path}")
        module_name = job_module_name(path)
        loader_spec = importlib.util.spec_from_file_location(module_name, path)
        if loader_spec is None or loader_spec.loader is None:
            raise ValueError(f"entry point {spec!r}: cannot load {path} as a Python module")
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[module_name] = module  # so Spark can pickle functions defined in it
        loader_spec.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(target)
        except ImportError as exc:
            raise ValueError(f"entry point {spec!r}: cannot import {target!r}: {exc}") from exc
    function = getattr(module, name, None)
    if not callable(function):
        raise ValueError(f"entry point {spec!r}: {target} has no function {name!r}")
    return function  # type: ignore[no-any-return]
