"""CreateAcls, DescribeAcls and DeleteAcls: what ``kafka-acls`` and ``AdminClient.create_acls`` send.

Guarantees, as Kafka's ``AclApis`` gives them:
- managing ACLs needs ALTER on the Cluster, listing them DESCRIBE on the Cluster
  (CLUSTER_AUTHORIZATION_FAILED for every creation or filter otherwise); without an authorizer
  (``authorizer = "none"``) the answer is SECURITY_DISABLED;
- CreateAcls validates each binding (a known resource type, LITERAL or PREFIXED, a concrete
  operation, ALLOW or DENY, a non-empty name, ``kafka-cluster`` for the Cluster, a ``Type:name``
  principal: INVALID_REQUEST naming the field otherwise) and stores the valid ones in one durable
  write before answering; creating an existing binding succeeds and changes nothing;
- DeleteAcls answers, per filter, every binding it matched, all removed in one durable write;
- DescribeAcls answers the bindings the filter matches, grouped by resource pattern.
A store that cannot be written answers UNKNOWN_SERVER_ERROR for the request's changes, and nothing
of them is enforced.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from onceflow.broker.acl import AclBinding, AclBindingFilter, AclOperation, InvalidAcl, check_new
from onceflow.broker.handlers.context import RequestContext
from onceflow.broker.statelog import StateLogError
from onceflow.core.logging import get_logger

log = get_logger("onceflow.broker.acl")

_NO_AUTHORIZER = "No Authorizer is configured on the broker"


def _denied(ctx: RequestContext, operation: AclOperation) -> str | None:
    """The refusal message when the principal may not do ``operation`` on the Cluster."""
    if ctx.authorized_cluster(operation):
        return None
    return f"Cluster authorization failed: {ctx.principal} may not {operation.name} the Cluster"


def _binding_values(binding: AclBinding) -> dict[str, object]:
    pattern, entry = binding.pattern, binding.entry
    return {
        "resource_type": int(pattern.resource_type),
        "resource_name": pattern.name,
        "pattern_type": int(pattern.pattern_type),
        "principal": entry.principal,
        "host": entry.host,
        "operation": int(entry.operation),
        "permission_type": int(entry.permission),
    }


async def handle_create(ctx: RequestContext, request: Any) -> Any:
    """CreateAcls (see module docs)."""
    creations = list(request.creations)

    def answer(results: list[tuple[ErrorCode, str | None]]) -> Any:
        return ctx.respond({"throttle_time": 0, "results": [{"error_code": c, "error_message": m} for c, m in results]})

    refusal = _denied(ctx, AclOperation.ALTER)
    if refusal is not None:
        return answer([(ErrorCode.cluster_authorization_failed, refusal)] * len(creations))
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        return answer([(ErrorCode.security_disabled, _NO_AUTHORIZER)] * len(creations))
    results: list[tuple[ErrorCode, str | None]] = []
    valid: list[AclBinding] = []
    for creation in creations:
        binding = AclBinding.of(
            resource_type=creation.resource_type,
            name=creation.resource_name,
            pattern_type=getattr(creation, "resource_pattern_type", 3),
            principal=creation.principal,
            host=creation.host,
            operation=creation.operation,
            permission=creation.permission_type,
        )
        try:
            check_new(binding)
        except InvalidAcl as exc:
            results.append((ErrorCode.invalid_request, str(exc)))
            continue
        valid.append(binding)
        results.append((ErrorCode.none, None))
    try:
        authorizer.acls.add(valid)
    except (OSError, StateLogError) as exc:
        log.warning("acl.create_failed", **ctx.log_dict(), reason=exc)
        failed = (ErrorCode.unknown_server_error, f"ACLs could not be stored: {exc}")
        results = [failed if code is ErrorCode.none else (code, message) for code, message in results]
    log.info("acl.create", **ctx.log_dict(), principal=ctx.principal, acls=len(valid))
    return answer(results)


def _filter(raw: Any) -> AclBindingFilter:
    return AclBindingFilter.of(
        resource_type=raw.resource_type_filter,
        name=raw.resource_name_filter,
        pattern_type=getattr(raw, "pattern_type_filter", 3),
        principal=raw.principal_filter,
        host=raw.host_filter,
        operation=raw.operation,
        permission=raw.permission_type,
    )


async def handle_describe(ctx: RequestContext, request: Any) -> Any:
    """DescribeAcls (see module docs)."""

    def error(code: ErrorCode, message: str) -> Any:
        return ctx.respond({"throttle_time": 0, "error_code": code, "error_message": message, "resources": []})

    refusal = _denied(ctx, AclOperation.DESCRIBE)
    if refusal is not None:
        return error(ErrorCode.cluster_authorization_failed, refusal)
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        return error(ErrorCode.security_disabled, _NO_AUTHORIZER)
    acl_filter = _filter(request)
    try:
        acl_filter.check()
    except InvalidAcl as exc:
        return error(ErrorCode.invalid_request, str(exc))
    grouped: dict[tuple[int, str, int], list[dict[str, object]]] = {}
    for binding in authorizer.acls.matching(acl_filter):
        values = _binding_values(binding)
        key = (int(binding.pattern.resource_type), binding.pattern.name, int(binding.pattern.pattern_type))
        grouped.setdefault(key, []).append(
            {k: values[k] for k in ("principal", "host", "operation", "permission_type")}
        )
    resources = [
        {"resource_type": rtype, "resource_name": name, "pattern_type": ptype, "acls": acls}
        for (rtype, name, ptype), acls in grouped.items()
    ]
    return ctx.respond(
        {"throttle_time": 0, "error_code": ErrorCode.none, "error_message": None, "resources": resources}
    )


async def handle_delete(ctx: RequestContext, request: Any) -> Any:
    """DeleteAcls (see module docs)."""
    filters = list(request.filters)

    def answer(results: list[dict[str, object]]) -> Any:
        return ctx.respond({"throttle_time": 0, "filter_results": results})

    def failed(code: ErrorCode, message: str) -> dict[str, object]:
        return {"error_code": code, "error_message": message, "matching_acls": []}

    refusal = _denied(ctx, AclOperation.ALTER)
    if refusal is not None:
        return answer([failed(ErrorCode.cluster_authorization_failed, refusal)] * len(filters))
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        return answer([failed(ErrorCode.security_disabled, _NO_AUTHORIZER)] * len(filters))
    matched: list[list[AclBinding] | str] = []
    for raw in filters:
        acl_filter = _filter(raw)
        try:
            acl_filter.check()
        except InvalidAcl as exc:
            matched.append(str(exc))
            continue
        matched.append(authorizer.acls.matching(acl_filter))
    try:
        authorizer.acls.remove(b for found in matched if not isinstance(found, str) for b in found)
    except (OSError, StateLogError) as exc:
        log.warning("acl.delete_failed", **ctx.log_dict(), reason=exc)
        return answer([failed(ErrorCode.unknown_server_error, f"ACLs could not be deleted: {exc}")] * len(filters))
    results: list[dict[str, object]] = [
        failed(ErrorCode.invalid_request, found)
        if isinstance(found, str)
        else {
            "error_code": ErrorCode.none,
            "error_message": None,
            "matching_acls": [
                {"error_code": ErrorCode.none, "error_message": None, **_binding_values(b)} for b in found
            ],
        }
        for found in matched
    ]
    log.info(
        "acl.delete",
        **ctx.log_dict(),
        principal=ctx.principal,
        acls=sum(len(f) for f in matched if not isinstance(f, str)),
    )
    return answer(results)
