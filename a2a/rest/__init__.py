"""The A2A 1.0 HTTP+JSON binding (REST routes under /a2a/rest/): a door, like a2a.jsonrpc."""
