"""A2A push notifications: webhook configs per task and their durable delivery.

`tasks/pushNotificationConfig/*` (0.3) and `*TaskPushNotificationConfig*` (1.0) store
configs; an on-commit subscriber records one delivery per (config, TaskEvent) and a
django-tasks job POSTs them in order, with retries and backoff. The task core never
imports this app: it registers its subscriber and its JSON-RPC methods in ready().
"""
