"""ACLs in Kafka's model: bindings (:mod:`.model`), their durable store (:mod:`.store`) and the
authorizer that enforces them (:mod:`.authorizer`)."""

from onceflow.broker.acl.authorizer import Authorizer, ProtectedResources, is_internal_topic
from onceflow.broker.acl.model import (
    CLUSTER_NAME,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    InvalidAcl,
    PatternType,
    PermissionType,
    ResourcePattern,
    ResourceType,
    check_new,
)
from onceflow.broker.acl.store import AclStore

__all__ = [
    "CLUSTER_NAME",
    "AccessControlEntry",
    "AclBinding",
    "AclBindingFilter",
    "AclOperation",
    "AclStore",
    "Authorizer",
    "InvalidAcl",
    "PatternType",
    "PermissionType",
    "ProtectedResources",
    "ResourcePattern",
    "ResourceType",
    "check_new",
    "is_internal_topic",
]
