"""Push notification configs over JSON-RPC, in both wire versions, through real HTTP.

Every error case runs inside `unchanged()` (task data, push configs, deliveries and
queued jobs). The Daphne under test does not allow private webhook addresses.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from a2a import api_keys
from a2a.push.methods import MASK
from a2a.push.models import PushConfig

pytestmark = pytest.mark.django_db(transaction=True)
V10 = {"A2A-Version": "1.0"}
HOOK = "https://example.com/webhook"
SET, GET, LIST, DELETE = (
    f"tasks/pushNotificationConfig/{m}" for m in ("set", "get", "list", "delete")
)
CREATE10, GET10 = "CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig"
LIST10, DELETE10 = "ListTaskPushNotificationConfigs", "DeleteTaskPushNotificationConfig"


def fields_of(err: dict) -> set[str]:
    """The bad fields an error names, in the 0.3 ({errors}) or 1.0 (BadRequest) form."""
    data = err.get("data")
    if isinstance(data, dict):
        return set(data.get("errors") or {})
    return {v["field"] for d in data or [] for v in d.get("fieldViolations", [])}


def expect_error(rpc, unchanged, method, params, code, field=None, headers=None) -> dict:
    with unchanged():
        err = rpc.error(method, params, headers=headers)
    assert err["code"] == code, err
    assert "Traceback" not in json.dumps(err)
    if field is not None:
        assert field in fields_of(err), (field, err)
    return err


def result_of(rpc, method: str, params: dict, headers=None) -> Any:
    answer = rpc(method, params, headers=headers)
    assert "error" not in answer and "result" in answer, answer
    return answer["result"]


# --- 0.3 -----------------------------------------------------------------------------------


def test_set_get_list_delete_in_the_0_3_shapes(rpc, make_task):
    task = make_task("completed")
    first = result_of(rpc, SET, {"taskId": task.id, "pushNotificationConfig": {"url": HOOK}})
    assert first == {"taskId": task.id, "pushNotificationConfig": {"id": task.id, "url": HOOK}}
    # get falls back to the first config when the id is absent, null, "default" or unknown
    for extra in ({}, {"pushNotificationConfigId": None}, {"pushNotificationConfigId": "default"}):
        assert result_of(rpc, GET, {"id": task.id, **extra}) == first
    secured = {
        "id": "ops",
        "url": "https://hooks.example.org/a2a?channel=7",
        "token": "tok-1",
        "authentication": {"schemes": ["Bearer"], "credentials": "s3cret"},
    }
    second = result_of(rpc, SET, {"taskId": task.id, "pushNotificationConfig": secured})
    masked = {
        **secured,
        "token": MASK,
        "authentication": {"schemes": ["Bearer"], "credentials": MASK},
    }
    assert second == {"taskId": task.id, "pushNotificationConfig": masked}  # write-only
    assert result_of(rpc, GET, {"id": task.id, "pushNotificationConfigId": "ops"}) == second
    assert result_of(rpc, LIST, {"id": task.id}) == [first, second]
    # set with an existing id replaces that config
    moved = {"id": "ops", "url": "https://hooks.example.org/v2"}
    replaced = result_of(rpc, SET, {"taskId": task.id, "pushNotificationConfig": moved})
    assert replaced["pushNotificationConfig"] == moved
    assert result_of(rpc, LIST, {"id": task.id}) == [first, replaced]
    # delete answers null (the key present), also for what is already gone
    for _ in range(2):
        answer = rpc(DELETE, {"id": task.id, "pushNotificationConfigId": "ops"})
        assert "result" in answer and answer["result"] is None, answer
    assert result_of(rpc, LIST, {"id": task.id}) == [first]
    assert result_of(rpc, DELETE, {"id": task.id, "pushNotificationConfigId": task.id}) is None
    assert result_of(rpc, LIST, {"id": task.id}) == []
    assert rpc.error(GET, {"id": task.id, "pushNotificationConfigId": "default"})["code"] == -32001


@pytest.mark.parametrize(
    "method,params",
    [
        (SET, {"taskId": "nonexistent-task-id", "pushNotificationConfig": {"url": HOOK}}),
        (GET, {"id": "nonexistent-task-id", "pushNotificationConfigId": "default"}),
        (LIST, {"id": "nonexistent-task-id"}),
        (DELETE, {"id": "nonexistent-task-id", "pushNotificationConfigId": "x"}),
    ],
)
def test_0_3_unknown_task(rpc, unchanged, make_task, method, params):
    make_task("working")
    err = expect_error(rpc, unchanged, method, params, -32001)
    assert "not found" in err["data"]["detail"]


def test_0_3_get_on_a_task_without_configs(rpc, unchanged, make_task):
    task = make_task("working")
    err = expect_error(rpc, unchanged, GET, {"id": task.id}, -32001)
    assert "no push notification config" in err["data"]["detail"]


BAD_03 = [
    ({"url": "ftp://example.com/x"}, "pushNotificationConfig.url"),
    ({"url": "example.com/hook"}, "pushNotificationConfig.url"),
    ({"url": "http://"}, "pushNotificationConfig.url"),
    ({"url": "https://user:pw@example.com/hook"}, "pushNotificationConfig.url"),
    ({"url": 5}, "pushNotificationConfig.url"),
    ({}, "pushNotificationConfig.url"),
    ({"url": HOOK, "token": 5}, "pushNotificationConfig.token"),
    ({"url": HOOK, "token": "a\r\nX-Evil: 1"}, "pushNotificationConfig.token"),
    ({"url": HOOK, "id": ""}, "pushNotificationConfig.id"),
    ({"url": HOOK, "authentication": "Bearer"}, "pushNotificationConfig.authentication"),
    (
        {"url": HOOK, "authentication": {"schemes": "Bearer"}},
        "pushNotificationConfig.authentication.schemes",
    ),
    (
        {"url": HOOK, "authentication": {"credentials": "x"}},
        "pushNotificationConfig.authentication.schemes",
    ),
    (
        {"url": HOOK, "authentication": {"schemes": ["Bearer"], "credentials": 7}},
        "pushNotificationConfig.authentication.credentials",
    ),
]


@pytest.mark.parametrize("config,field", BAD_03)
def test_0_3_set_refuses_bad_configs(rpc, unchanged, make_task, config, field):
    task = make_task("working")
    params = {"taskId": task.id, "pushNotificationConfig": config}
    expect_error(rpc, unchanged, SET, params, -32602, field)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/hook",
        "http://[::1]/hook",
        "http://10.0.0.7/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://localhost/hook",
        "http://2130706433/hook",
        "http://[::ffff:127.0.0.1]/hook",
    ],
)
def test_private_webhooks_are_refused_by_default(rpc, unchanged, make_task, url):
    task = make_task("working")
    params = {"taskId": task.id, "pushNotificationConfig": {"url": url}}
    err = expect_error(rpc, unchanged, SET, params, -32602, "pushNotificationConfig.url")
    assert "private" in err["data"]["detail"]
    expect_error(rpc, unchanged, CREATE10, {"taskId": task.id, "url": url}, -32602, "url", V10)


@pytest.mark.parametrize(
    "method,params,field",
    [
        (SET, {"taskId": 5, "pushNotificationConfig": {"url": HOOK}}, "taskId"),
        (SET, {"taskId": "{task}"}, "pushNotificationConfig"),
        (SET, {"taskId": "{task}", "pushNotificationConfig": [HOOK]}, "pushNotificationConfig"),
        (GET, {"id": "{task}", "pushNotificationConfigId": 5}, "pushNotificationConfigId"),
        (GET, {}, "id"),
        (LIST, {"id": 5}, "id"),
        (DELETE, {"id": "{task}"}, "pushNotificationConfigId"),
        (DELETE, {"id": "{task}", "pushNotificationConfigId": None}, "pushNotificationConfigId"),
    ],
)
def test_0_3_wrong_types(rpc, unchanged, make_task, method, params, field):
    task = make_task("working")
    result_of(rpc, SET, {"taskId": task.id, "pushNotificationConfig": {"url": HOOK}})
    params = json.loads(json.dumps(params).replace("{task}", task.id))
    expect_error(rpc, unchanged, method, params, -32602, field)


def test_a_task_holds_a_bounded_number_of_configs(rpc, unchanged, make_task, settings):
    task = make_task("working")
    limit = settings.TASKDECK["PUSH"]["MAX_CONFIGS_PER_TASK"]
    for i in range(limit):
        config = {"id": f"c{i}", "url": f"{HOOK}/{i}"}
        result_of(rpc, SET, {"taskId": task.id, "pushNotificationConfig": config})
    over = {"taskId": task.id, "pushNotificationConfig": {"id": "one-more", "url": HOOK}}
    expect_error(rpc, unchanged, SET, over, -32602, "pushNotificationConfig.id")
    # replacing one that exists is still fine
    again = {"taskId": task.id, "pushNotificationConfig": {"id": "c0", "url": HOOK}}
    assert result_of(rpc, SET, again)["pushNotificationConfig"]["url"] == HOOK


@pytest.mark.parametrize(
    "method,params",
    [
        (SET, {"taskId": "{task}", "pushNotificationConfig": {"url": HOOK}}),
        (GET, {"id": "{task}"}),  # configs hold the webhook's secrets
        (LIST, {"id": "{task}"}),
        (DELETE, {"id": "{task}", "pushNotificationConfigId": "c0"}),
    ],
)
def test_configs_need_the_write_scope(rpc, unchanged, make_task, method, params):
    task = make_task("working")
    result_of(
        rpc,
        SET,
        {"taskId": task.id, "pushNotificationConfig": {"id": "c0", "url": HOOK, "token": "secret"}},
    )
    _, reader = api_keys.create_key("push-reader", ["read"], owner="test-client")
    body = json.loads(json.dumps(params).replace("{task}", task.id))
    with unchanged():
        answer = rpc.raw(
            {"jsonrpc": "2.0", "id": 1, "method": method, "params": body}, token=reader
        )
    assert answer.status_code == 403
    assert answer.json()["error"]["data"]["requiredScope"] == "write"
    assert "secret" not in answer.text


# --- 1.0 -------------------------------------------------------------------------------------


def test_create_get_list_delete_in_the_1_0_shapes(rpc, make_task):
    """The TCK's calls: snake_case `task_id`, a completed task, delete twice."""
    task = make_task("completed")
    full = {
        "id": "tck-push-1",
        "url": "https://example.com/tck-push-webhook",
        "token": "tok",
        "authentication": {"scheme": "Bearer", "credentials": "secret"},
    }
    created = result_of(rpc, CREATE10, {"task_id": task.id, **full}, V10)
    assert created == {
        "id": "tck-push-1",
        "taskId": task.id,
        "url": full["url"],
        "token": MASK,  # secrets are write-only on the wire
        "authentication": {"scheme": "Bearer", "credentials": MASK},
    }
    assert list(created) == ["id", "taskId", "url", "token", "authentication"]
    plain = result_of(rpc, CREATE10, {"taskId": task.id, "url": HOOK, "tenant": ""}, V10)
    assert plain == {"id": task.id, "taskId": task.id, "url": HOOK}  # id defaults to the task's
    assert result_of(rpc, GET10, {"task_id": task.id, "id": "tck-push-1"}, V10) == created
    listed = result_of(rpc, LIST10, {"task_id": task.id, "page_size": 10}, V10)
    assert listed == {"configs": [created, plain]}
    # the same configs, seen through the 0.3 methods
    as_03 = result_of(rpc, GET, {"id": task.id, "pushNotificationConfigId": "tck-push-1"})
    assert as_03["pushNotificationConfig"]["authentication"] == {
        "schemes": ["Bearer"],
        "credentials": MASK,
    }
    for _ in range(2):  # idempotent
        answer = rpc(DELETE10, {"task_id": task.id, "id": "tck-push-1"}, headers=V10)
        assert "result" in answer and answer["result"] is None, answer
    assert rpc.error(GET10, {"task_id": task.id, "id": "tck-push-1"}, headers=V10)["code"] == -32001
    assert result_of(rpc, LIST10, {"taskId": task.id}, V10) == {"configs": [plain]}


@pytest.mark.parametrize(
    "method,params",
    [
        (CREATE10, {"taskId": "nonexistent-task-id", "url": HOOK}),
        (GET10, {"taskId": "nonexistent-task-id", "id": "x"}),
        (LIST10, {"taskId": "nonexistent-task-id"}),
        (DELETE10, {"taskId": "nonexistent-task-id", "id": "x"}),
        (GET10, {"taskId": "{task}", "id": "no-such-config"}),
    ],
)
def test_1_0_unknown_task_or_config(rpc, unchanged, make_task, method, params):
    task = make_task("working")
    params = json.loads(json.dumps(params).replace("{task}", task.id))
    expect_error(rpc, unchanged, method, params, -32001, headers=V10)


@pytest.mark.parametrize(
    "method,params,field",
    [
        (CREATE10, {"url": HOOK}, "taskId"),
        (CREATE10, {"taskId": "{task}"}, "url"),
        (CREATE10, {"taskId": "{task}", "url": 5}, "url"),
        (CREATE10, {"taskId": "{task}", "url": "gopher://example.com/"}, "url"),
        (CREATE10, {"taskId": "{task}", "url": HOOK, "id": 5}, "id"),
        (CREATE10, {"taskId": "{task}", "url": HOOK, "token": ["t"]}, "token"),
        (
            CREATE10,
            {"taskId": "{task}", "url": HOOK, "authentication": {}},
            "authentication.scheme",
        ),
        (
            CREATE10,
            {"taskId": "{task}", "url": HOOK, "authentication": {"scheme": "Bearer token"}},
            "authentication.scheme",
        ),
        (
            CREATE10,
            {
                "taskId": "{task}",
                "url": HOOK,
                "authentication": {"scheme": "Bearer", "credentials": "é"},
            },
            "authentication.credentials",
        ),
        (GET10, {"taskId": "{task}"}, "id"),
        (GET10, {"taskId": "{task}", "id": 5}, "id"),
        (LIST10, {"taskId": "{task}", "pageSize": "10"}, "pageSize"),
        (DELETE10, {"taskId": "{task}"}, "id"),
    ],
)
def test_1_0_bad_params(rpc, unchanged, make_task, method, params, field):
    task = make_task("working")
    params = json.loads(json.dumps(params).replace("{task}", task.id))
    expect_error(rpc, unchanged, method, params, -32602, field, V10)


# --- Inline configs on message/send and SendMessage -----------------------------------------


def _send_params(config_field: str, config: Any, **message) -> dict:
    return {
        "message": {
            "role": "user",
            "messageId": f"m-{uuid.uuid4()}",
            "parts": [{"kind": "text", "text": "hello"}],
            **message,
        },
        "configuration": {config_field: config},
    }


def test_a_config_sent_with_a_message_is_stored_with_its_task(rpc):
    task = result_of(
        rpc, "message/send", _send_params("pushNotificationConfig", {"url": HOOK, "token": "t3"})
    )
    listed = result_of(rpc, LIST, {"id": task["id"]})
    assert [c["pushNotificationConfig"]["url"] for c in listed] == [HOOK]
    assert listed[0]["pushNotificationConfig"]["token"] == MASK  # set, and not shown
    v10 = _send_params("taskPushNotificationConfig", {"url": HOOK, "token": "t10"})
    v10["message"] = {"role": "ROLE_USER", "messageId": "m-10", "parts": [{"text": "hi"}]}
    v10["configuration"]["returnImmediately"] = True
    sent = result_of(rpc, "SendMessage", v10, V10)
    configs = result_of(rpc, LIST10, {"taskId": sent["task"]["id"]}, V10)["configs"]
    assert [(c["url"], c["token"]) for c in configs] == [(HOOK, MASK)]
    stored = PushConfig.objects.get(task_id=sent["task"]["id"])
    assert stored.token.startswith("fernet:") and "t10" not in stored.token  # sealed at rest
    assert stored.plain_token == "t10"


@pytest.mark.parametrize(
    "config,field",
    [
        ({"url": "http://127.0.0.1:9/hook"}, "url"),
        ({"url": "ftp://example.com/hook"}, "url"),
        ({"token": "no url"}, "url"),
        ("https://example.com/hook", ""),
    ],
)
def test_a_bad_config_sent_with_a_message_refuses_the_message(rpc, unchanged, config, field):
    """Checked before the message is delivered: no task, no message, no config."""
    where = "configuration.pushNotificationConfig" + (f".{field}" if field else "")
    expect_error(
        rpc,
        unchanged,
        "message/send",
        _send_params("pushNotificationConfig", config),
        -32602,
        where,
    )


def test_a_config_sent_to_a_task_that_cannot_take_the_message_is_not_stored(
    rpc, unchanged, make_task
):
    task = make_task("completed")
    params = _send_params("pushNotificationConfig", {"url": HOOK}, taskId=task.id)
    expect_error(rpc, unchanged, "message/send", params, -32004)
    params = _send_params("pushNotificationConfig", {"url": HOOK}, taskId="no-such-task")
    expect_error(rpc, unchanged, "message/send", params, -32001)


def test_secrets_are_sealed_at_rest_and_survive_a_key_rotation(make_task, monkeypatch, request):
    """Sealed with the first of TASKDECK_PUSH_SECRET_KEYS; after a new key is put first,
    `reseal_push_secrets` moves every secret to it and the old key can go."""
    from cryptography.fernet import Fernet
    from django.core.management import call_command

    from a2a.push import sealing
    from a2a.push import services as push

    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    request.addfinalizer(sealing._fernet.cache_clear)  # later tests get the default key

    def keys(value: str) -> None:
        monkeypatch.setenv("TASKDECK_PUSH_SECRET_KEYS", value)
        sealing._fernet.cache_clear()

    task = make_task("working")
    keys(old)
    push.set_config(
        task.id,
        push.ConfigInput(url=HOOK, token="tok-A", schemes=("Bearer",), credentials="cred-A"),
        version="1.0",
        actor=None,
    )
    row = PushConfig.objects.get(task=task)
    assert "tok-A" not in row.token and "cred-A" not in row.auth_credentials
    keys(f"{new},{old}")
    call_command("reseal_push_secrets", stdout=open("/dev/null", "w"))  # noqa: SIM115
    keys(new)  # the old key is gone
    row.refresh_from_db()
    assert (row.plain_token, row.plain_credentials) == ("tok-A", "cred-A")
    keys(old)
    with pytest.raises(ValueError, match="cannot be unsealed"):
        row.plain_token  # noqa: B018
