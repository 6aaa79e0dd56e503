"""The A2A 1.0 gRPC binding: its own process (`manage.py run_grpc`), the same services and
keys as the JSON-RPC door. Each RPC becomes a call of `a2a.protocol.calls.decide` under
the JSON-RPC 1.0 method of the same name; this package only translates messages, metadata
and statuses (`proto/` holds the service descriptions; `generated/` is made from them by
`make install`)."""
