import pytest

pytestmark = pytest.mark.django_db(transaction=True)


def test_send_then_get_over_http(rpc):
    task = rpc.result(
        "message/send",
        {
            "message": {
                "role": "user",
                "messageId": "m-1",
                "parts": [{"kind": "text", "text": "hi"}],
            }
        },
    )
    assert task["status"]["state"] == "submitted"
    got = rpc.result("tasks/get", {"id": task["id"]})
    assert got["history"][0]["parts"] == [{"kind": "text", "text": "hi"}]


def test_pause_made_in_process_is_seen_over_http(rpc, make_task):
    task = make_task("paused-by-client")
    got = rpc.result("tasks/get", {"id": task.id})
    assert got["status"]["state"] == "paused-by-client"
    assert got["metadata"]["pause"]["initiator"] == "client"
