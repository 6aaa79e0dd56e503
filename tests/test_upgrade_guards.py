"""Guards for the private parts of dependencies that Taskdeck relies on, one test per touch
point that no behaviour test covers on its own (docs/upgrading.md lists them all, with the
tests that guard the others). Each fails with what to re-check after an upgrade.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from asgiref.sync import SyncToAsync, sync_to_async
from channels.db import database_sync_to_async

ROOT = Path(__file__).resolve().parents[1]
SEE = "see docs/upgrading.md"


# ----- asgiref: SyncToAsync.threadlocal (a2a/runtime/inline.py) -------------------------------


def _loop_seen_by_the_thread() -> tuple[object, object]:
    local = SyncToAsync.threadlocal
    return getattr(local, "main_event_loop", None), getattr(local, "main_event_loop_pid", None)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "hop",
    [
        sync_to_async(_loop_seen_by_the_thread, thread_sensitive=True),
        sync_to_async(_loop_seen_by_the_thread, thread_sensitive=False),
        database_sync_to_async(_loop_seen_by_the_thread, thread_sensitive=False),
    ],
    ids=["thread_sensitive", "shared_executor", "channels_database"],
)
async def test_a_sync_call_knows_the_event_loop_that_handed_it_the_call(hop):
    """a2a.runtime.inline._schedule starts an inline run on the loop that handed the call's
    thread its work, read from asgiref's private `SyncToAsync.threadlocal`."""
    loop, pid = await hop()
    assert (loop, pid) == (asyncio.get_running_loop(), os.getpid()), (
        "asgiref's SyncToAsync.threadlocal no longer carries main_event_loop and "
        "main_event_loop_pid inside a sync_to_async call: inline runs "
        f"(a2a/runtime/inline.py) would never start; {SEE}"
    )


# ----- Daphne / Twisted: WebRequest patched (dashboard/body_limit.py) -------------------------


def test_daphnes_request_still_has_what_the_body_limit_wraps():
    """tests/test_body_limit.py drives the patch on a live Daphne; this names the piece that
    moved if it fails after an upgrade."""
    from daphne.http_protocol import HTTPFactory, WebRequest
    from twisted.web.http import HTTPChannel

    for name, params in (
        ("gotLength", ["self", "length"]),
        ("handleContentChunk", ["self", "data"]),
        ("requestReceived", ["self", "command", "path", "version"]),
    ):
        method = getattr(WebRequest, name, None)
        assert method is not None, f"daphne's WebRequest has no {name}; {SEE}"
        assert list(inspect.signature(method).parameters) == params, (
            f"WebRequest.{name} takes other arguments now; dashboard/body_limit.py wraps it; {SEE}"
        )
    channel = inspect.getsource(HTTPChannel)
    for call in (".gotLength(", ".handleContentChunk", ".requestReceived("):
        assert call in channel, f"Twisted's HTTPChannel no longer calls request{call}; {SEE}"
    assert "self._path = " in inspect.getsource(HTTPChannel.lineReceived), (
        "Twisted's HTTPChannel no longer keeps the request line's path in `_path`: an early "
        f"refusal would lose the JSON-RPC / AIP-193 shape (dashboard/body_limit.py); {SEE}"
    )
    assert "requestFactory = WebRequest" in inspect.getsource(HTTPFactory.buildProtocol), (
        f"Daphne no longer builds its requests from WebRequest; {SEE}"
    )
    from twisted.web.http import Request

    assert "self._parsePOSTFormSubmission" in inspect.getsource(Request.requestReceived), (
        "Twisted's Request no longer asks `_parsePOSTFormSubmission` before it parses a POST "
        f"body as a form (dashboard/body_limit.py switches that off); {SEE}"
    )


def test_installing_the_body_limit_replaces_those_three_methods():
    """In a child process: installing it imports Twisted's reactor, which this process must
    leave to Daphne's own (tests start Daphne in children)."""
    script = (
        "from daphne.http_protocol import WebRequest\n"
        "from dashboard import body_limit\n"
        "body_limit.install()\n"
        "print(WebRequest.gotLength.__name__, WebRequest.handleContentChunk.__name__,"
        " WebRequest.requestReceived.__name__)\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"}
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["limited_got_length", "limited_chunk", "limited_received"]


# ----- Daphne / Twisted / Django: the reason phrase (dashboard/reason_phrase.py) --------------


def test_daphne_still_sets_the_status_on_the_start_message_only():
    """dashboard/reason_phrase.py sets Twisted's `code_message` after Daphne's
    handle_reply has handled `http.response.start`: that must be where Daphne sets the
    status, and Twisted must write the status line from `code_message` with the first
    body bytes. tests/a2a/test_status_line.py sees the phrase on a live Daphne."""
    from daphne.http_protocol import WebRequest
    from django.core.handlers.asgi import ASGIHandler
    from twisted.web.http import Request

    assert list(inspect.signature(WebRequest.handle_reply).parameters) == ["self", "message"]
    assert 'self.setResponseCode(message["status"])' in inspect.getsource(
        WebRequest.handle_reply
    ), f"Daphne sets the status elsewhere now (dashboard/reason_phrase.py); {SEE}"
    assert "self.code_message" in inspect.getsource(Request.write), (
        f"Twisted no longer writes the status line from code_message; {SEE}"
    )
    assert '"http.response.start"' in inspect.getsource(ASGIHandler.send_response), (
        f"Django's send_response no longer sends the start message itself; {SEE}"
    )


# ----- Daphne / autobahn / Twisted: WebSocketProtocol patched (dashboard/websocket_limits.py) -


def test_daphnes_websocket_protocol_still_has_what_the_send_bound_wraps():
    """tests/agui/test_socket_limits.py drives the patch on a live Daphne; this names the
    piece that moved if it fails after an upgrade."""
    from autobahn.websocket.protocol import WebSocketProtocol as Autobahn
    from daphne.ws_protocol import WebSocketProtocol
    from twisted.internet.abstract import FileDescriptor

    assert list(inspect.signature(WebSocketProtocol.handle_reply).parameters) == [
        "self",
        "message",
    ], f"Daphne's WebSocketProtocol.handle_reply changed; dashboard/websocket_limits.py; {SEE}"
    assert issubclass(WebSocketProtocol, Autobahn)
    assert {"code", "reason"} <= set(inspect.signature(Autobahn.sendClose).parameters)
    assert "self.closeHandshakeTimeout" in inspect.getsource(Autobahn.sendCloseFrame), (
        f"autobahn no longer reads the close grace from the protocol instance; {SEE}"
    )
    from channels.sessions import InstanceSessionWrapper
    from daphne.server import Server

    assert "send=partial(self.handle_reply, protocol)" in inspect.getsource(
        Server.create_application
    ), f"Daphne no longer hands the app partial(handle_reply, protocol); {SEE}"
    assert "self.real_send = send" in inspect.getsource(InstanceSessionWrapper), (
        f"Channels' session wrapper no longer keeps the server's send as real_send; {SEE}"
    )
    source = inspect.getsource(FileDescriptor)
    for name in ("self.dataBuffer", "self.offset", "self._tempDataLen"):
        assert name in source, (
            f"Twisted's FileDescriptor has no {name}: the send bound cannot measure what a "
            f"socket holds (dashboard/websocket_limits.py); {SEE}"
        )


# ----- Django: ASGIHandler copied (dashboard/protocol_handler.py) ------------------------------

# sha256 of the source of what dashboard/protocol_handler.py's ProtocolHandler replaces, as
# Django 5.2.19 has it. A change means: read Django's new version, carry what changed over
# to ProtocolHandler (keeping its two differences: signals sent inline, no
# ThreadSensitiveContext), then put the new hash here.
DJANGO_COPIED = {
    "django.core.handlers.asgi.ASGIHandler.__call__": (
        "f756809e9c9308dcccb78a301fccf09196e80cdc4745690f80384d09b69dd102"
    ),
    "django.core.handlers.asgi.ASGIHandler.handle": (
        "98faeb5bef800331e6a8002fbc96b30e4122a23438ae45a047190a531ea11323"
    ),
    "django.core.handlers.base.BaseHandler.load_middleware": (
        "a1fb7ee5f8586195da2174d1bbc2bbfc7ca19b9d26ea66412cb434f45bf6d467"
    ),
}


def _source_hash(dotted: str) -> str:
    module_name, cls_name, attr = dotted.rsplit(".", 2)
    module = __import__(module_name, fromlist=[cls_name])
    source = inspect.getsource(getattr(getattr(module, cls_name), attr))
    return hashlib.sha256(source.encode()).hexdigest()


@pytest.mark.parametrize("dotted", list(DJANGO_COPIED))
def test_the_django_code_the_protocol_handler_copies_is_unchanged(dotted):
    import django

    assert _source_hash(dotted) == DJANGO_COPIED[dotted], (
        f"{dotted} changed in Django {django.get_version()}: dashboard/protocol_handler.py's "
        f"ProtocolHandler replaces it with a copy; re-read it and carry the change over; {SEE}"
    )


def test_the_protocol_handler_uses_only_asgi_handler_methods_that_exist():
    from django.core.handlers.asgi import ASGIHandler

    for name in (
        "read_body",
        "create_request",
        "send_response",
        "listen_for_disconnect",
        "run_get_response",
        "_get_response_async",
    ):
        assert callable(getattr(ASGIHandler, name, None)), f"ASGIHandler.{name} is gone; {SEE}"


# ----- django-tasks-db: db_worker's sleep, the "as soon as possible" date ---------------------


def test_db_worker_still_sleeps_through_its_modules_time():
    """run_worker swaps db_worker's module-level `time` for the doorbell's clock
    (a2a/runtime/management/commands/run_worker.py)."""
    from django_tasks_db.management.commands import db_worker

    assert getattr(db_worker, "time", None) is time, (
        f"django-tasks-db's db_worker module no longer imports `time`; {SEE}"
    )
    assert "time.sleep(self.interval)" in inspect.getsource(db_worker.Worker), (
        "django-tasks-db's Worker no longer waits with time.sleep(self.interval): the "
        f"doorbell would not end its waits, and workers would start jobs a poll late; {SEE}"
    )


@pytest.mark.django_db
def test_a_job_due_at_once_carries_the_date_max_and_moving_it_defers_it():
    """a2a.runtime.wakeups brings a deferred job forward by writing `run_after` on its row
    (get_date_max(): as soon as possible), and the scheduler reads `worker_ids`."""
    from datetime import timedelta

    from django.utils import timezone
    from django_tasks_db.models import DBTaskResult, get_date_max

    from a2a.runtime.jobs import run_task

    job = run_task.enqueue("no-such-task")
    row = DBTaskResult.objects.get(pk=job.id)
    assert row.run_after == get_date_max(), f"an immediate job's run_after changed; {SEE}"
    assert DBTaskResult.objects.ready().filter(pk=row.pk).exists(), SEE
    row.run_after = timezone.now() + timedelta(hours=1)
    row.save(update_fields=["run_after"])
    assert not DBTaskResult.objects.ready().filter(pk=row.pk).exists(), SEE
    row.run_after = get_date_max()
    row.save(update_fields=["run_after"])
    assert DBTaskResult.objects.ready().filter(pk=row.pk).exists(), SEE
    assert row.worker_ids == [] and DBTaskResult.objects.running().count() == 0, SEE
