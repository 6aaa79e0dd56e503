"""The code generated from `proto/` (a2a.proto of A2A 1.0, Taskdeck's pause extension), in
one place, with a useful error when it has not been generated yet: it is made by
`make install` and never committed (Makefile, GRPC_OUT)."""

from __future__ import annotations

try:
    from a2a.grpc_door.generated import a2a_pb2, a2a_pb2_grpc
    from a2a.grpc_door.generated import taskdeck_pause_pb2 as pause_pb2
    from a2a.grpc_door.generated import taskdeck_pause_pb2_grpc as pause_pb2_grpc
except ImportError as exc:  # pragma: no cover - a checkout without `make install`
    raise ImportError(
        "the gRPC code is generated at install time: run `make install` "
        f"(a2a/grpc_door/generated/ is missing or stale: {exc})"
    ) from exc

__all__ = ["a2a_pb2", "a2a_pb2_grpc", "pause_pb2", "pause_pb2_grpc"]

# The services this binding serves (a2a/grpc_door/binding.py builds their handlers).
SERVICES = (
    a2a_pb2.DESCRIPTOR.services_by_name["A2AService"],
    pause_pb2.DESCRIPTOR.services_by_name["TaskdeckPauseService"],
)
