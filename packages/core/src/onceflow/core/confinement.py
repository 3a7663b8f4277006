"""Never trust a request's paths: confine files to configured roots and URI schemes (docs/design.md, "Security").

Two checks, both made *before* anything is opened:

- :func:`confine_path`: a local path is allowed only if its real path (symlinks and ``..``
  resolved) lies inside the real path of one of the allowed directories. The file connector of
  the Connect runtime uses it for ``allowed_paths``.
- :class:`StagingConfinement`: a staged-file URI is allowed only if its scheme is one of the
  allowed schemes and it lies inside one of the staging roots: for ``file`` (or a plain path) by
  real path as above; for any other scheme (``s3``, ``hdfs``...) by prefix of a root of the same
  scheme, after refusing ``..`` segments. URIs with a query or a fragment, and ``file`` URIs naming
  another host, are refused. The participant server uses it on every Prepare and Commit.

A refusal is a :class:`PathNotAllowed` that names the path (cut to :data:`MAX_SHOWN_CHARS`) and
the allowed roots; it never reads the file, so it cannot reveal its contents or checksum.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final
from urllib.parse import unquote, urlsplit

from onceflow.core.errors import InvalidConfig, OnceflowError

#: The scheme of local files; a URI without a scheme is a local path.
FILE_SCHEME: Final = "file"
#: How much of a refused path an error message shows.
MAX_SHOWN_CHARS: Final = 200


class PathNotAllowed(OnceflowError):  # noqa: N818 - reads as a verdict
    """A path or URI from a request or a connector config lies outside what this service may open."""

    def __init__(self, path: str, reason: str) -> None:
        shown = path if len(path) <= MAX_SHOWN_CHARS else path[:MAX_SHOWN_CHARS] + "..."
        self.path = path
        self.reason = reason
        super().__init__(f"{shown!r} is not allowed: {reason}")


def _is_within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _real(path: str) -> Path:
    return Path(os.path.realpath(os.path.expanduser(path)))


def confine_path(path: str | os.PathLike[str], allowed: Iterable[str | os.PathLike[str]]) -> Path:
    """The real path of ``path`` if it lies inside one of the ``allowed`` directories; else :class:`PathNotAllowed`.

    Symlinks and ``..`` are resolved on both sides, so a link inside an allowed directory that
    points outside it is refused, and so is ``allowed/../etc/passwd``. No allowed directory at all
    refuses everything.
    """
    raw = os.fspath(path)
    roots = [_real(os.fspath(root)) for root in allowed]
    if not roots:
        raise PathNotAllowed(raw, "no directories are allowed (the allowed list is empty)")
    if "\x00" in raw:
        raise PathNotAllowed(raw, "it contains a NUL character")
    real = _real(raw)
    if any(_is_within(real, root) for root in roots):
        return real
    listed = ", ".join(str(root) for root in roots)
    raise PathNotAllowed(raw, f"it resolves outside the allowed directories ({listed})")


def _has_dot_dot(path: str) -> bool:
    return any(segment == ".." for candidate in (path, unquote(path)) for segment in candidate.split("/"))


@dataclass(frozen=True)
class _Root:
    scheme: str
    location: str  # the real path of a local root; ``scheme://rest`` without a trailing slash otherwise


class StagingConfinement:
    """Staged-file URIs allowed under ``roots`` with a scheme of ``schemes`` (see the module docstring).

    A root is a local directory (a path or a ``file://`` URI) or a URI of another scheme
    (``s3://bucket/staging``); its scheme must be allowed. Bad settings raise :class:`InvalidConfig`
    naming ``setting``.
    """

    def __init__(self, roots: Iterable[str], schemes: Iterable[str], *, setting: str = "staging") -> None:
        self.schemes = frozenset(scheme.lower() for scheme in schemes)
        self._roots: list[_Root] = []
        for root in roots:
            parts = urlsplit(root)
            scheme = (parts.scheme or FILE_SCHEME).lower()
            if scheme not in self.schemes:
                raise InvalidConfig(
                    f"{setting}.roots", f"root {root!r} has scheme {scheme!r}, which {setting}.allowed_schemes lacks"
                )
            if scheme == FILE_SCHEME:
                self._roots.append(_Root(scheme, str(_real(parts.path if parts.scheme else root))))
            else:
                if _has_dot_dot(parts.path):
                    raise InvalidConfig(f"{setting}.roots", f"root {root!r} must not contain '..'")
                self._roots.append(_Root(scheme, f"{scheme}://{parts.netloc}{posixpath.normpath(parts.path or '/')}"))
        if not self._roots:
            raise InvalidConfig(f"{setting}.roots", "at least one staging root is needed")

    @property
    def roots(self) -> list[str]:
        """The normalized roots (local ones as real paths)."""
        return [root.location for root in self._roots]

    def check(self, uri: str) -> str:
        """Return ``uri`` if it may be opened; raise :class:`PathNotAllowed` otherwise. Nothing is opened."""
        if "\x00" in uri:
            raise PathNotAllowed(uri, "it contains a NUL character")
        parts = urlsplit(uri)
        scheme = (parts.scheme or FILE_SCHEME).lower()
        if scheme not in self.schemes:
            allowed = ", ".join(sorted(self.schemes))
            raise PathNotAllowed(uri, f"scheme {scheme!r} is not an allowed staging scheme ({allowed})")
        if parts.query or parts.fragment or "?" in uri or "#" in uri:
            raise PathNotAllowed(uri, "a staged-file URI has no query or fragment")
        path = parts.path if parts.scheme else uri
        if _has_dot_dot(path):
            raise PathNotAllowed(uri, "it contains a '..' segment")
        listed = ", ".join(self.roots)
        if scheme == FILE_SCHEME:
            if parts.scheme and parts.netloc not in ("", "localhost"):
                raise PathNotAllowed(uri, f"a file URI names host {parts.netloc!r}; only local files are read")
            real = _real(path)
            if any(root.scheme == FILE_SCHEME and _is_within(real, Path(root.location)) for root in self._roots):
                return uri
            raise PathNotAllowed(uri, f"it resolves outside the staging roots ({listed})")
        normalized = f"{scheme}://{parts.netloc}{posixpath.normpath(path or '/')}"
        for root in self._roots:
            if root.scheme == scheme and normalized.startswith(root.location.rstrip("/") + "/"):
                return uri
        raise PathNotAllowed(uri, f"it lies outside the staging roots ({listed})")
