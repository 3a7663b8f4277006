"""Where a driver's executors run, and what they must therefore share with it.

A master is **single-host** when every executor runs on the driver's machine: ``local``,
``local[N]``, ``local[*]``, ``local-cluster[...]``, and a standalone master (``spark://``) whose every
host is a loopback address (``127.0.0.0/8``, ``::1``, ``localhost``): a worker registers with a
loopback master only from the same machine. Every other master (``spark://`` on any other address,
even this machine's own name or LAN address, ``k8s://``, ``yarn``) is **multi-host**: its executors
may run anywhere, so

- the checkpoint (Spark's offset and commit logs on the driver, the state store's files from the
  executors) must be reachable from every node, and
- so must the staging root, where the executors' write tasks stage each batch and the
  participants read it.

A local path (no scheme, or ``file:``) for either is refused on a multi-host master, unless the
user says it is on a filesystem every node mounts (``checkpoint_shared`` / ``staging_shared``).
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from onceflow.core.errors import InvalidConfig
from onceflow.spark.job.settings import SparkJobSettings

_LOCAL_MASTERS = ("local[", "local-cluster[")
_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})


def is_single_host(master: str) -> bool:
    """True if every executor of ``master`` runs on the driver's machine (see the module docstring)."""
    master = master.strip()
    if master == "local" or master.startswith(_LOCAL_MASTERS):
        return True
    if master.startswith("spark://"):
        addresses = master[len("spark://") :].split(",")  # spark://h1:7077,h2:7077 (masters with a standby)
        return all(_is_loopback(_host_of(address)) for address in addresses)
    return False


def is_local_path(location: str) -> bool:
    """True for a path on this machine's own filesystem: no URI scheme, or ``file:``."""
    scheme = urlsplit(location).scheme.lower()
    return scheme in ("", "file")


def check_shared_storage(settings: SparkJobSettings, master: str) -> None:
    """Refuse a local checkpoint or staging root on a multi-host ``master``, unless declared shared.

    Raises :class:`InvalidConfig` naming the setting, its value, the master and the way out. The
    staging root is checked only for an exactly-once job (the at-least-once baseline stages nothing).
    """
    if is_single_host(master):
        return
    locations = [("checkpoint_location", settings.checkpoint_location, settings.checkpoint_shared, "checkpoint_shared")]
    if settings.guarantee == "exactly-once":
        locations.append(("staging_root", settings.staging_root, settings.staging_shared, "staging_shared"))
    for setting, location, shared, declared in locations:
        if is_local_path(location) and not shared:
            raise InvalidConfig(
                setting,
                f"{location!r} is a local path, but master {master} may run executors on other hosts, and "
                f"every node must reach it: use storage they all reach (e.g. s3a://bucket/prefix or "
                f"hdfs://...), or, if this path is on a filesystem every node mounts at the same place, "
                f"set {declared} = true",
            )


def _host_of(address: str) -> str:
    address = address.strip().rstrip("/")
    if address.startswith("["):  # [::1]:7077
        return address[1 : address.find("]")]
    return address.rsplit(":", 1)[0] if address.count(":") == 1 else address


def _is_loopback(host: str) -> bool:
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name other than localhost: resolved elsewhere, assume another host
