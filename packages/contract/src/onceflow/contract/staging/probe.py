"""The start-up check of a staging root: every service that stages (the Spark driver, the coordinator, the
participant) proves at start that it can write, read and delete there, instead of failing at the first
batch."""

from __future__ import annotations

import os
import socket
import uuid
from typing import Final

from onceflow.contract.staging.exceptions import StagingError
from onceflow.contract.staging.location import InvalidStagingUri, StagingLocation, parse_staging_uri
from onceflow.contract.staging.store import StagingStore
from onceflow.core.errors import OnceflowError
from onceflow.core.logging import get_logger

#: The directory under a staging root that probe objects live in (hidden: no job lists it).
PROBE_DIRECTORY: Final = ".onceflow-probe"

_log = get_logger(__name__)


class StagingRootUnusable(OnceflowError):  # noqa: N818 - reads as a verdict
    """A staging root cannot be written, read or deleted from: names the root and the cause, on one line."""

    def __init__(self, root: str, cause: str) -> None:
        self.root = root
        self.cause = cause
        super().__init__(f"staging root {root} is unusable: {cause}")


def probe_staging_root(root: str, store: StagingStore, *, service: str) -> StagingLocation:
    """Check that ``service`` can use staging root ``root``; returns its location.

    Steps:
        1. Parse the root (:class:`~onceflow.contract.staging.location.InvalidStagingUri` is unusable).
        2. Write a probe object ``<root>/.onceflow-probe/<service>-<host>-<pid>-<random>``.
        3. Read it back and compare.
        4. Delete it.

    Any failure raises :class:`StagingRootUnusable` with the cause (a missing bucket, refused
    credentials, an unreachable endpoint, a directory that cannot be written). A probe object left
    behind by a crash between steps 2 and 4 is a few bytes under the hidden probe directory.
    """
    # Step 1
    try:
        location = parse_staging_uri(root)
    except InvalidStagingUri as exc:
        raise StagingRootUnusable(root, exc.reason) from None
    name = f"{service}-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:12]}"
    probe = location.child(PROBE_DIRECTORY, name)
    payload = f"onceflow staging probe {name}".encode()
    step = "write"
    try:
        # Step 2
        store.publish(probe, payload)
        # Step 3
        step = "read"
        if store.read(probe) != payload:
            raise StagingRootUnusable(root, f"the probe object {probe.uri} read back different bytes")
        # Step 4
        step = "delete"
        store.delete(probe)
    except StagingError as exc:
        raise StagingRootUnusable(root, f"cannot {step} a probe object: {_cause(exc)}") from None
    _log.info("staging.probed", service=service, root=location.uri, store=_describe(store, location))
    return location


def _cause(exc: StagingError) -> str:
    """The cause part of a store error ("cannot write <uri>: <cause>"), on one line."""
    message = " ".join(str(exc).split())
    prefix = f"{exc.uri}: "
    return message.split(prefix, 1)[1] if prefix in message else message


def _describe(store: StagingStore, location: StagingLocation) -> str:
    return "local" if location.store == "file" else str(store.s3)
