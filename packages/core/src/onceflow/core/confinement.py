"""Never trust a request's paths: confine local files to configured roots (docs/design.md, "Security").

:func:`confine_path`: a local path is allowed only if its real path (symlinks and ``..`` resolved)
lies inside the real path of one of the allowed directories. The file connector of the Connect
runtime uses it for ``allowed_paths``; staged-file URIs are confined by
:class:`onceflow.contract.staging.confinement.StagingConfinement`, on the same :func:`real_path`.

A refusal is a :class:`PathNotAllowed` that names the path (cut by :func:`~onceflow.core.errors.shown`)
and the allowed roots; it never reads the file, so it cannot reveal its contents or checksum.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from onceflow.core.errors import OnceflowError, shown

__all__ = ["PathNotAllowed", "confine_path", "real_path"]


class PathNotAllowed(OnceflowError):  # noqa: N818 - reads as a verdict
    """A path or URI from a request or a connector config lies outside what this service may open."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{shown(path)!r} is not allowed: {reason}")


def _is_within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def real_path(path: str) -> Path:
    """``path`` with ``~``, symlinks and ``..`` resolved."""
    return Path(os.path.realpath(os.path.expanduser(path)))


def confine_path(path: str | os.PathLike[str], allowed: Iterable[str | os.PathLike[str]]) -> Path:
    """The real path of ``path`` if it lies inside one of the ``allowed`` directories; else :class:`PathNotAllowed`.

    Symlinks and ``..`` are resolved on both sides, so a link inside an allowed directory that
    points outside it is refused, and so is ``allowed/../etc/passwd``. No allowed directory at all
    refuses everything.
    """
    raw = os.fspath(path)
    roots = [real_path(os.fspath(root)) for root in allowed]
    if not roots:
        raise PathNotAllowed(raw, "no directories are allowed (the allowed list is empty)")
    if "\x00" in raw:
        raise PathNotAllowed(raw, "it contains a NUL character")
    real = real_path(raw)
    if any(_is_within(real, root) for root in roots):
        return real
    listed = ", ".join(str(root) for root in roots)
    raise PathNotAllowed(raw, f"it resolves outside the allowed directories ({listed})")
