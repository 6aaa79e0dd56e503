"""The A2A JSON-RPC binding: the HTTP endpoint, its envelope and error codes, SSE framing.
Operations and wire shapes come from `a2a.protocol`; nothing else imports this package."""
