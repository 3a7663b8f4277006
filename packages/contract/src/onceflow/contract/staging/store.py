"""The one way staging (and the checkpoint files onceflow reads) reaches storage: a local directory, or an
S3 API store through pyarrow's S3 filesystem.

:class:`StagingStore` turns a :class:`~onceflow.contract.staging.location.StagingLocation` into a
filesystem and a path (:meth:`StagingStore.filesystem`) and offers the few operations staging needs,
each with the guarantee it needs on either store:

- :meth:`~StagingStore.publish` makes a complete file visible under its name or nothing: locally a
  temporary file, fsync, rename and directory fsync; on S3 one upload, which only its completion
  makes visible;
- :meth:`~StagingStore.read`, :meth:`~StagingStore.list_names`, :meth:`~StagingStore.exists`;
- :meth:`~StagingStore.delete_tree` never follows a symlink: locally every directory below the root
  is opened with ``O_NOFOLLOW`` and removed through its descriptor.

Errors are :class:`~onceflow.contract.staging.exceptions.StagingError` (a missing file
:class:`~onceflow.contract.staging.exceptions.StagedFileMissing`) naming the URI, on one line and
without any credential. A process has one default store (:func:`default_store`): each service
installs its own at start (:func:`install_store`) from its ``[staging.s3]`` settings; elsewhere
(Spark's Python workers) it comes from the standard AWS environment variables.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import threading
import uuid
from collections.abc import Mapping

from pyarrow import fs as pafs

from onceflow.contract.staging.exceptions import StagedFileMissing, StagingError
from onceflow.contract.staging.location import FILE_SCHEME, StagingLocation, parse_staging_uri
from onceflow.contract.staging.s3 import S3Connection
from onceflow.contract.staging.settings import S3Settings

_LOCAL = pafs.LocalFileSystem()
_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


class SymlinkRefused(StagingError):  # noqa: N818 - reads as a verdict
    """A deletion met a symlink where a directory of the staging root should be; nothing was deleted."""


class StagingStore:
    """Reads, writes, lists and deletes staging locations (see the module docstring).

    ``s3`` settings win over the standard AWS variables of ``environ`` (default: this process's
    environment), field by field. The S3 connection is made on first use and shared (pyarrow's
    filesystems are thread-safe).
    """

    def __init__(self, s3: S3Settings | None = None, *, environ: Mapping[str, str] | None = None) -> None:
        self._s3_settings = s3
        self._environ = environ
        self._lock = threading.Lock()
        self._s3: S3Connection | None = None
        self._s3fs: pafs.S3FileSystem | None = None

    @property
    def s3(self) -> S3Connection:
        """The S3 connection of ``s3://`` locations (resolved once)."""
        with self._lock:
            if self._s3 is None:
                environ = os.environ if self._environ is None else self._environ
                self._s3 = S3Connection.resolve(self._s3_settings, environ)
            return self._s3

    def filesystem(self, location: StagingLocation) -> tuple[pafs.FileSystem, str]:
        """The pyarrow filesystem and path of ``location``: the one mapping from a staging URI to storage."""
        if location.store == FILE_SCHEME:
            return _LOCAL, location.path
        connection = self.s3
        with self._lock:
            if self._s3fs is None:
                self._s3fs = connection.filesystem()
            s3fs = self._s3fs
        return s3fs, f"{location.bucket}/{location.path}".rstrip("/")

    def locate(self, uri: str) -> tuple[pafs.FileSystem, str]:
        """:meth:`filesystem` of the location ``uri`` names (:class:`InvalidStagingUri` if it names none)."""
        return self.filesystem(parse_staging_uri(uri))

    # -- operations ------------------------------------------------------------------------------

    def _error(self, location: StagingLocation, doing: str, exc: OSError | ValueError) -> StagingError:
        """What storage raised while ``doing``, as a :class:`StagingError` naming the URI."""
        if isinstance(exc, FileNotFoundError):
            return StagedFileMissing(location.uri)
        if location.store == FILE_SCHEME:
            cause = f"{type(exc).__name__}: {exc}"
        else:
            cause = self.s3.explain(exc, location.bucket)
        return StagingError(location.uri, f"cannot {doing} {location.uri}: {cause}")

    def read(self, location: StagingLocation) -> bytes:
        """Every byte of the file at ``location``."""
        try:
            if location.store == FILE_SCHEME:
                with open(location.path, "rb") as handle:
                    return handle.read()
            filesystem, path = self.filesystem(location)
            with filesystem.open_input_stream(path) as stream:
                return bytes(stream.read())
        except (OSError, ValueError) as exc:
            raise self._error(location, "read", exc) from None

    def exists(self, location: StagingLocation) -> bool:
        """True if a file or directory is at ``location``."""
        try:
            filesystem, path = self.filesystem(location)
            return bool(filesystem.get_file_info(path).type != pafs.FileType.NotFound)
        except (OSError, ValueError) as exc:
            raise self._error(location, "look up", exc) from None

    def publish(self, location: StagingLocation, data: bytes) -> None:
        """Make ``data`` the file at ``location``, completely or not at all (replacing an earlier one).

        Steps (local): 1. write a hidden temporary file in the directory and fsync it; 2. rename it to
        its name and fsync the directory. On S3 one upload does both: an object is only visible once
        its upload completed.
        """
        try:
            if location.store == FILE_SCHEME:
                _publish_local(location.path, data)
            else:
                filesystem, path = self.filesystem(location)
                with filesystem.open_output_stream(path) as out:
                    out.write(data)
        except (OSError, ValueError) as exc:
            raise self._error(location, "write", exc) from None

    def delete(self, location: StagingLocation) -> None:
        """Delete the file at ``location`` (missing: :class:`StagedFileMissing`)."""
        try:
            filesystem, path = self.filesystem(location)
            filesystem.delete_file(path)
        except (OSError, ValueError) as exc:
            raise self._error(location, "delete", exc) from None

    def list_names(self, location: StagingLocation) -> list[str]:
        """The names of the entries of directory ``location``, sorted; [] when it does not exist."""
        try:
            filesystem, path = self.filesystem(location)
            selector = pafs.FileSelector(path, allow_not_found=True, recursive=False)
            return sorted(info.base_name for info in filesystem.get_file_info(selector))
        except (OSError, ValueError) as exc:
            raise self._error(location, "list", exc) from None

    def delete_tree(self, location: StagingLocation, root: StagingLocation) -> bool:
        """Delete directory ``location`` (inside ``root``) and everything in it, never through a symlink.

        Returns False when it was already gone. Locally, ``root`` itself may be a symlink (it is
        configured), but no directory from ``root`` down to ``location`` may be: that is a
        :class:`SymlinkRefused`, and nothing is deleted. Inside ``location``, symlinks are removed,
        never followed.
        """
        if not location.within(root) or location == root:
            raise StagingError(location.uri, f"{location.uri} is not a directory inside {root.uri}")
        try:
            if location.store == FILE_SCHEME:
                return _delete_local_tree(location, root)
            filesystem, path = self.filesystem(location)
            if filesystem.get_file_info(path).type == pafs.FileType.NotFound:
                return False
            filesystem.delete_dir(path)
            return True
        except (OSError, ValueError) as exc:
            raise self._error(location, "delete", exc) from None


def _publish_local(path: str, data: bytes) -> None:
    """Steps: 1. write a hidden temporary file next to ``path`` and fsync it; 2. rename it to ``path``
    and fsync the directory."""
    directory, name = os.path.split(path)
    os.makedirs(directory, exist_ok=True)
    # Step 1
    tmp = os.path.join(directory, f".{name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        # Step 2
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_directory(directory)


def _delete_local_tree(location: StagingLocation, root: StagingLocation) -> bool:
    """Steps: 1. open ``root``; 2. open every directory below it down to ``location`` with
    ``O_NOFOLLOW`` (a symlink fails with ELOOP or ENOTDIR); 3. remove ``location`` through its
    parent's descriptor (``rmtree`` with ``dir_fd`` does not follow symlinks)."""
    names = location.path[len(root.path.rstrip("/")) + 1 :].split("/")
    # Step 1
    try:
        parent = os.open(root.path, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return False
    try:
        # Step 2
        for name in names:
            child = _open_directory_below(parent, name, location)
            if child is None:
                return False
            if name == names[-1]:
                os.close(child)
                break
            os.close(parent)
            parent = child
        # Step 3
        shutil.rmtree(names[-1], dir_fd=parent)
        return True
    finally:
        os.close(parent)


def _open_directory_below(parent: int, name: str, location: StagingLocation) -> int | None:
    """Directory ``name`` of ``parent``, opened without following a symlink; None when it is gone."""
    try:
        return os.open(name, _DIRECTORY_FLAGS, dir_fd=parent)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            reason = f"not deleting {location.uri}: {name!r} on its way is a symlink or not a directory, never followed"
            raise SymlinkRefused(location.uri, reason) from None
        raise


def _fsync_directory(path: str) -> None:
    descriptor = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


class _DefaultStore:
    """The process's default store, created on first use unless a service installed one."""

    lock = threading.Lock()
    store: StagingStore | None = None


def default_store() -> StagingStore:
    """The store this process stages with: the one a service installed, else one on the environment."""
    with _DefaultStore.lock:
        if _DefaultStore.store is None:
            _DefaultStore.store = StagingStore()
        return _DefaultStore.store


def install_store(store: StagingStore) -> None:
    """Make ``store`` this process's :func:`default_store` (a service does it at start, from its settings)."""
    with _DefaultStore.lock:
        _DefaultStore.store = store
