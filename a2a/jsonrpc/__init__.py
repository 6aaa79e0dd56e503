"""The JSON-RPC transport: wire shapes, validation and error codes; no business rules."""
