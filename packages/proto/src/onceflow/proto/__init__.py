"""onceflow.proto: the gRPC contracts of every onceflow service.

The stubs in ``onceflow.proto.v1`` are generated from ``proto/onceflow/v1/*.proto`` by
``proto/generate.py`` and committed; CI fails when they are stale. Do not edit them by hand.
"""
