"""No new service (docs/design/projection-after-commit.md, D8): a web process in the default
`thread` mode projects its own writers' changes on its projector thread, with no scheduler,
no sweep and no Redis (the in-memory channel layer)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agui import projection, selectors
from agui.models import AguiEvent
from tests.agui.test_projection_after_commit import caught_up
from tests.agui.test_websocket import Client, version_of
from tests.conftest import Rpc, local_http, start_daphne, stop_daphne

pytestmark = pytest.mark.django_db(transaction=True)


def _application(passes: str):
    """In the forked child: the in-memory channel layer (whatever this lane's is), and
    each projection pass writes the name of the thread it runs on to `passes`."""
    from channels.layers import channel_layers
    from channels.routing import get_default_application
    from django.test import override_settings

    override_settings(
        CHANNEL_LAYERS={"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    ).enable()
    channel_layers.backends.clear()

    def note(held: list[str]) -> None:
        with open(passes, "a") as out:
            out.write(f"{threading.current_thread().name} {' '.join(held)}\n")

    projection.before_commit = note
    return get_default_application()


@pytest.fixture
def threaded_server(django_db_setup, django_db_blocker, tmp_path) -> Iterator[tuple[str, Path]]:
    """A Daphne of its own with TASKDECK_PROJECTION=thread; its URL and the file its
    passes are noted in."""
    passes = tmp_path / "passes"
    proc = start_daphne(
        django_db_blocker,
        lambda: _application(str(passes)),
        what="the threaded Daphne",
        environ={"TASKDECK_PROJECTION": "thread"},
    )
    yield f"http://127.0.0.1:{proc.port.value}", passes
    stop_daphne(proc)


def test_a_pause_reaches_a_socket_as_one_state_delta_projected_by_the_servers_thread(
    threaded_server, api_key, make_task
):
    url, passes = threaded_server
    task = make_task("working")  # projected here (`sync`)
    version, cursor = version_of(task.id), selectors.cursor()
    client = Client(url.replace("http://", "ws://") + "/ws/agui/", api_key)
    try:
        assert client.recv()["type"] == "STATE_SNAPSHOT"
        with local_http(base_url=url, timeout=30) as http:
            Rpc(http, api_key).result("tasks/pause", {"taskId": task.id, "reason": "look"})
        client.until_version(task.id, version + 1)
        entry = client.state["view"]["tasks"][task.id]
        assert entry["status"] == "paused-by-client" and entry["pause"]["reason"] == "look"
        assert client.state == selectors.snapshot()
    finally:
        client.close()
    deltas = AguiEvent.objects.filter(task=task, id__gt=cursor, type="STATE_DELTA")
    assert list(deltas.values_list("version", flat=True)) == [version + 1]
    # (the counts over every task come as CUSTOM taskdeck.counts beside: not the view's)
    changes = [e["type"] for e in client.events[1:] if e["type"] != "CUSTOM"]
    assert changes == ["ACTIVITY_SNAPSHOT", "STATE_DELTA"]
    caught_up(task.id)
    noted = passes.read_text().splitlines()
    assert noted and all(line.startswith("taskdeck-projector ") for line in noted), noted
    assert f"taskdeck-projector {task.id}" in noted


# A short-lived process in `thread` mode (`manage.py emit_event`, `seed_demo`): it commits
# a change and exits at once, before its projector thread would have run.
SHORT_LIVED = """
import sys
import django

django.setup()
from a2a import services
from agui import projection

# what is tested is that the exit drains, not its 2 s bound: a loaded machine's PostgreSQL
# pass may outlast that (the sweep then takes the rest, as designed)
projection.EXIT_SECONDS = 120

actor = services.Actor("client", "test", tenant="key:test-client")
services.pause_task(sys.argv[1], actor=actor, reason="from a script")
"""


def test_a_short_lived_process_projects_its_change_before_it_exits(make_task):
    import subprocess
    import sys

    from django.db import connection

    from tests.agui.test_projection_after_commit import ROOT, child_env, due

    task = make_task("working")
    connection.close()
    done = subprocess.run(
        [sys.executable, "-c", SHORT_LIVED, task.id],
        cwd=ROOT,
        env={**child_env(), "TASKDECK_PROJECTION": "thread"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert due(task.id) == []  # drained at exit (atexit): nothing left for the sweep
    caught_up(task.id)
    assert selectors.snapshot()["view"]["tasks"][task.id]["status"] == "paused-by-client"
