"""The A2A protocol as Taskdeck speaks it, shared by its bindings: operations (the method
table), params, wire shapes (0.3, 1.0, Bindu), stream items, the agent card.

The JSON-RPC binding (`a2a.jsonrpc`) frames these over HTTP; the push app posts stream
items to webhooks. Knows wire shapes; no business rules (those live in `a2a.services`).
"""
