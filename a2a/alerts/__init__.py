"""Operator alerts: what needs a person, sent by email and an outgoing webhook
(docs/production.md, "Alerts")."""
