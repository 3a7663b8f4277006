"""Confine staged-file URIs to the staging roots and schemes (docs/design.md, "Security").

A staged-file URI is allowed only if its scheme is one of the allowed schemes and the location it
names lies inside one of the staging roots. The URI is parsed by
:func:`onceflow.contract.staging.location.parse_staging_uri`, the parser the reader opens it with,
so the check is made on exactly what is opened: local files by real path (symlinks resolved),
``s3://`` objects by bucket and key prefix. The participant server uses it on every Prepare and
Commit. A refusal is a :class:`~onceflow.core.confinement.PathNotAllowed`; a string that is no URI
at all (a chained URL, a NUL character) is an :class:`InvalidStagingUri` instead: a malformed request.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from onceflow.contract.staging.location import (
    FILE_SCHEME,
    SCHEMES,
    InvalidStagingUri,
    StagingLocation,
    parse_staging_uri,
)
from onceflow.core.confinement import PathNotAllowed, real_path
from onceflow.core.errors import InvalidConfig

__all__ = ["InvalidStagingUri", "PathNotAllowed", "StagingConfinement"]


class StagingConfinement:
    """Staged-file URIs allowed under ``roots`` with a scheme of ``schemes`` (see the module docstring).

    A root is a local directory (a path or a ``file://`` URI) or ``s3://bucket/prefix``; its scheme
    must be allowed, and only the schemes of :data:`~onceflow.contract.staging.location.SCHEMES` are
    (``s3a`` is ``s3``: allowing one allows both). Bad settings raise :class:`InvalidConfig` naming ``setting``.
    """

    def __init__(self, roots: Iterable[str], schemes: Iterable[str], *, setting: str = "staging") -> None:
        self.schemes = frozenset(scheme.lower() for scheme in schemes)
        unknown = sorted(self.schemes - SCHEMES.keys())
        if unknown:
            raise InvalidConfig(
                f"{setting}.allowed_schemes", f"staging supports {', '.join(sorted(SCHEMES))}, not {', '.join(unknown)}"
            )
        self._stores = {SCHEMES[scheme] for scheme in self.schemes}
        self._roots: list[StagingLocation] = []
        for root in roots:
            scheme = (urlsplit(root).scheme or FILE_SCHEME).lower()
            if SCHEMES.get(scheme) not in self._stores:
                raise InvalidConfig(
                    f"{setting}.roots", f"root {root!r} has scheme {scheme!r}, which {setting}.allowed_schemes lacks"
                )
            try:
                location = parse_staging_uri(root)
            except InvalidStagingUri as exc:
                raise InvalidConfig(f"{setting}.roots", str(exc)) from None
            if location.store == FILE_SCHEME:
                location = StagingLocation(FILE_SCHEME, str(real_path(location.path)))
            self._roots.append(location)
        if not self._roots:
            raise InvalidConfig(f"{setting}.roots", "at least one staging root is needed")

    @property
    def roots(self) -> list[str]:
        """The normalized roots (local ones as real paths, others as URIs)."""
        return [root.path if root.store == FILE_SCHEME else root.uri for root in self._roots]

    def check(self, uri: str) -> str:
        """Return ``uri`` if it may be opened; raise :class:`PathNotAllowed` otherwise. Nothing is opened.

        Steps:
            1. A chained URL or a NUL character is no staging URI: :class:`InvalidStagingUri`.
            2. The scheme must be allowed.
            3. Parse ``uri`` with the staging parser (what the reader opens); a form it refuses
               (a query, another host, ``..``) is not allowed.
            4. The location (a local one by real path) must lie inside a root.
        """
        # Step 1
        if "\x00" in uri or "::" in uri:
            parse_staging_uri(uri)  # raises InvalidStagingUri naming the problem
        # Step 2
        scheme = (urlsplit(uri).scheme or FILE_SCHEME).lower()
        if SCHEMES.get(scheme) not in self._stores:
            allowed = ", ".join(sorted(self.schemes))
            raise PathNotAllowed(uri, f"scheme {scheme!r} is not an allowed staging scheme ({allowed})")
        # Step 3
        try:
            location = parse_staging_uri(uri)
        except InvalidStagingUri as exc:
            raise PathNotAllowed(uri, exc.reason) from None
        # Step 4
        listed = ", ".join(self.roots)
        if location.store == FILE_SCHEME:
            location = StagingLocation(FILE_SCHEME, str(real_path(location.path)))
            if any(location.within(root) for root in self._roots):
                return uri
            raise PathNotAllowed(uri, f"it resolves outside the staging roots ({listed})")
        if any(location.within(root) and location != root for root in self._roots):
            return uri
        raise PathNotAllowed(uri, f"it lies outside the staging roots ({listed})")
