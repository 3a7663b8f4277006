"""``onceflow acls``: the least-privilege ACLs of every service, derived from the services' settings."""

from onceflow.acls.plan import READER_GROUPS, Grant, plan
from onceflow.acls.topology import SERVICES, Topology

__all__ = ["READER_GROUPS", "SERVICES", "Grant", "Topology", "plan"]
