"""``AclStore``: the broker's ACLs, durable in a replayed state log (``data_dir/acls/acls.statelog``).

Every change is one transition: (1) check what changes against the bindings in memory, (2) append it
to the log in one atomic write (fsynced: ACLs are rare and guard everything else), (3) apply it in
memory. A failed append raises and leaves the bindings in memory exactly as they were, so what the
authorizer enforces is always what a restart would replay.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from onceflow.broker.acl.model import AclBinding, AclBindingFilter, ResourceType
from onceflow.broker.statelog import StateLog
from onceflow.core.logging import get_logger

log = get_logger("onceflow.broker.acl")

STATE_LOG_NAME = "acls.statelog"
_PRESENT = b"1"
_FORMAT = 1
#: A record key is ``[_FORMAT, *these]`` as JSON, the arguments of :meth:`AclBinding.of` in order.
_FIELDS = ("resource_type", "name", "pattern_type", "principal", "host", "operation", "permission")


def _key(binding: AclBinding) -> bytes:
    pattern, entry = binding.pattern, binding.entry
    fields = [
        _FORMAT,
        int(pattern.resource_type),
        pattern.name,
        int(pattern.pattern_type),
        entry.principal,
        entry.host,
        int(entry.operation),
        int(entry.permission),
    ]
    return json.dumps(fields, separators=(",", ":"), ensure_ascii=False).encode()


def _binding(key: bytes) -> AclBinding:
    version, *fields = json.loads(key)
    if version != _FORMAT:
        raise ValueError(f"unknown ACL record format {version}")
    return AclBinding.of(**dict(zip(_FIELDS, fields, strict=True)))


class AclStore:
    """The set of ACL bindings of one data dir (see module docs). Not thread-safe: the broker's event
    loop is its only user."""

    def __init__(self, state_log: StateLog) -> None:
        self._log = state_log
        self._bindings: dict[AclBinding, None] = {}
        self._by_type: dict[ResourceType, list[AclBinding]] = {}

    @classmethod
    def open(cls, directory: Path) -> AclStore:
        """Open (creating if needed) the ACL log in ``directory`` and replay it."""
        store = cls(StateLog.open(directory / STATE_LOG_NAME, fsync=True))
        for key, value in store._log.replay():
            binding = _binding(key)
            if value is None:
                store._bindings.pop(binding, None)
            else:
                store._bindings[binding] = None
        store._reindex()
        log.info("acl.loaded", acls=len(store._bindings))
        return store

    def close(self) -> None:
        """Close the log (idempotent)."""
        self._log.close()

    def __len__(self) -> int:
        return len(self._bindings)

    def of_type(self, resource_type: ResourceType) -> Sequence[AclBinding]:
        """Every binding on resources of ``resource_type`` (the authorizer's view)."""
        return self._by_type.get(resource_type, ())

    def matching(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        """The bindings ``acl_filter`` selects, in a stable order."""
        return sorted(b for b in self._bindings if acl_filter.matches(b))

    def add(self, bindings: Iterable[AclBinding]) -> None:
        """Create every binding not already present, in one durable write."""
        # Step 1
        new = [b for b in dict.fromkeys(bindings) if b not in self._bindings]
        if not new:
            return
        # Step 2
        self._log.append_many([(_key(b), _PRESENT) for b in new])
        # Step 3
        for binding in new:
            self._bindings[binding] = None
            log.info("acl.created", acl=binding.describe())
        self._reindex()

    def remove(self, bindings: Iterable[AclBinding]) -> None:
        """Delete every given binding that is present, in one durable write."""
        # Step 1
        gone = [b for b in dict.fromkeys(bindings) if b in self._bindings]
        if not gone:
            return
        # Step 2
        self._log.append_many([(_key(b), None) for b in gone])
        # Step 3
        for binding in gone:
            del self._bindings[binding]
            log.info("acl.deleted", acl=binding.describe())
        self._reindex()

    def _reindex(self) -> None:
        by_type: dict[ResourceType, list[AclBinding]] = {}
        for binding in self._bindings:
            by_type.setdefault(binding.pattern.resource_type, []).append(binding)
        self._by_type = by_type
