"""JSON-RPC methods for push notification configs, in the 0.3 and 1.0 wire shapes.

Added to a2a.protocol.methods.METHODS by `add` (a2a/protocol/extensions.py). Handlers take
validated params and answer wire dicts; domain errors (TaskNotFound and ConfigNotFound:
-32001, ValidationFailed: -32602) are mapped by the view.
"""

from __future__ import annotations

from typing import Any

from a2a.protocol.table import Call, Method

from . import params as p
from . import services
from .models import PushConfig

# --- Wire shapes ------------------------------------------------------------------------------


# Webhook secrets are write-only on the wire: a config's answers say that there is a token
# or credentials, never what they are (its owner set them; the webhook receives them).
MASK = "********"


def config_03(c: PushConfig) -> dict[str, Any]:
    """0.3 TaskPushNotificationConfig: {taskId, pushNotificationConfig}."""
    inner: dict[str, Any] = {"id": c.config_id, "url": c.url}
    if c.token:
        inner["token"] = MASK
    if c.auth_schemes:
        auth: dict[str, Any] = {"schemes": list(c.auth_schemes)}
        if c.auth_credentials:
            auth["credentials"] = MASK
        inner["authentication"] = auth
    return {"taskId": c.task_id, "pushNotificationConfig": inner}


def config_10(c: PushConfig) -> dict[str, Any]:
    """1.0 TaskPushNotificationConfig: flat {id, taskId, url, token?, authentication?}."""
    out: dict[str, Any] = {"id": c.config_id, "taskId": c.task_id, "url": c.url}
    if c.token:
        out["token"] = MASK
    if c.auth_schemes:
        auth: dict[str, Any] = {"scheme": c.auth_scheme}
        if c.auth_credentials:
            auth["credentials"] = MASK
        out["authentication"] = auth
    return out


# --- 0.3: tasks/pushNotificationConfig/{set,get,list,delete} -------------------------------


def set_03(params: dict, call: Call) -> dict:
    row = services.set_config(
        params["taskId"],
        services.ConfigInput.of(params["pushNotificationConfig"]),
        version="0.3",
        actor=call.actor,
        field="pushNotificationConfig",
    )
    return config_03(row)


def get_03(params: dict, call: Call) -> dict:
    row = services.get_config_or_first(
        params["task"], params.get("pushNotificationConfigId"), actor=call.actor
    )
    return config_03(row)


def list_03(params: dict, call: Call) -> list:
    return [config_03(c) for c in services.list_configs(params["task"], actor=call.actor)]


def delete_03(params: dict, call: Call) -> None:
    services.delete_config(params["task"], params["pushNotificationConfigId"], actor=call.actor)
    return None


# --- 1.0: *TaskPushNotificationConfig(s) ------------------------------------------------------


def create_10(params: dict, call: Call) -> dict:
    row = services.set_config(
        params["task"], services.ConfigInput.of(params), version="1.0", actor=call.actor
    )
    return config_10(row)


def get_10(params: dict, call: Call) -> dict:
    return config_10(services.get_config(params["task"], params["id"], actor=call.actor))


def list_10(params: dict, call: Call) -> dict:
    return {
        "configs": [config_10(c) for c in services.list_configs(params["task"], actor=call.actor)]
    }


def delete_10(params: dict, call: Call) -> None:
    services.delete_config(params["task"], params["id"], actor=call.actor)
    return None


# Reading configs needs `write` too: they hold the client's webhook token and credentials,
# with which a read-only key could forge notifications to the client.
PUSH_METHODS_03: dict[str, Method] = {
    "tasks/pushNotificationConfig/set": Method(set_03, p.SetParams03, "write"),
    "tasks/pushNotificationConfig/get": Method(get_03, p.GetParams03, "write"),
    "tasks/pushNotificationConfig/list": Method(list_03, p.ListParams03, "write"),
    "tasks/pushNotificationConfig/delete": Method(delete_03, p.DeleteParams03, "write"),
}

PUSH_METHODS_10: dict[str, Method] = {
    "CreateTaskPushNotificationConfig": Method(create_10, p.CreateParams10, "write", version="1.0"),
    "GetTaskPushNotificationConfig": Method(get_10, p.ConfigRefParams10, "write", version="1.0"),
    "ListTaskPushNotificationConfigs": Method(list_10, p.ListParams10, "write", version="1.0"),
    "DeleteTaskPushNotificationConfig": Method(
        delete_10, p.ConfigRefParams10, "write", version="1.0"
    ),
}


def add(methods: dict[str, Method], send_hooks: list) -> None:
    """Extend the doors' method table (a2a/protocol/extensions.py): these methods, and the
    hook that checks and stores an inline config of message/send."""
    methods.update(PUSH_METHODS_03)
    methods.update(PUSH_METHODS_10)
    if services.send_hook not in send_hooks:
        send_hooks.append(services.send_hook)
