import pytest
from tests.a2a.test_bindu_dialect import pause, user_message, BINDU_HEADER
pytestmark = pytest.mark.django_db(transaction=True)

def test_probe(rpc, make_task):
    task = make_task("working")
    rpc.result("message/send", {"message": user_message(task.id, "two")})
    pause(rpc, task.id)
    for hl in (0, 1):
        got = rpc.result("tasks/get", {"task_id": task.id, "historyLength": hl})
        print(hl, len(got["metadata"]["checkpoint"]["message_history"]), len(got.get("history", [])))
    lst = rpc.result("tasks/list", {}, headers=BINDU_HEADER)
    print(lst["tasks"][0]["status"]["state"], lst["tasks"][0]["metadata"])
    print(rpc("tasks/pause", {"task_id": "x"*200}))
    print(rpc("tasks/get", {"task_id": task.id, "bogus": 1}))
