"""Push delivery when things go wrong: found in review, each pinned here.

A webhook that drips its answer, a job that outlives its lease, a config starved out of
the sweep by another's backlog, and the recording of an event with its own transaction.
Jobs run in this process (their queueing is replaced by a list), so every interleaving is
made by hand, deterministically.
"""

from __future__ import annotations

import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from django.db import connection, transaction
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from a2a import services
from a2a.push import delivery
from a2a.push import services as push
from a2a.push.models import PushConfig, PushDelivery
from tests.conftest import AGENT

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def quick(settings, allow_private) -> None:
    settings.TASKDECK["PUSH"].update(BACKOFF_SECONDS=0.05, MAX_ATTEMPTS=3, TIMEOUT_SECONDS=0.5)


@pytest.fixture
def queued(monkeypatch) -> list[int]:
    """Delivery jobs that would have been queued (config pks), instead of queueing them."""
    kicked: list[int] = []
    monkeypatch.setattr(delivery, "_enqueue", lambda pk, at=None: kicked.append(pk))
    return kicked


@pytest.fixture
def dripping_webhook() -> Iterator[str]:
    """A server that answers one byte every 0.2 s: each read is quick, the answer is not."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def answer(conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)
            for byte in (
                b"HTTP/1.1 200 OK\r\nX-Pad: " + b"a" * 60 + b"\r\nContent-Length: 0\r\n\r\n"
            ):
                if stop.wait(0.2):
                    return
                try:
                    conn.send(bytes([byte]))
                except OSError:  # the client gave up: that is the point
                    return

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=answer, args=(conn,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}/hook"
    stop.set()
    server.close()


def test_a_webhook_dripping_its_answer_is_cut_off(quick, dripping_webhook):
    """httpx's timeouts are per read; 0.2 s per byte never trips a 0.5 s one, and the whole
    answer would take ~16 s. The attempt as a whole is bounded (twice the timeout), so a
    webhook cannot hold a worker, or the config's lease, for as long as it likes."""
    with pytest.raises(httpx.TimeoutException):
        delivery.post(dripping_webhook, {"Content-Type": "application/json"}, {"x": 1})


@pytest.fixture
def self_signed_webhook(tmp_path: Path) -> Iterator[tuple[str, list[bytes]]]:
    """An HTTPS server whose certificate no authority signed; what reached it is listed."""
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    server = socket.create_server(("127.0.0.1", 0))
    received: list[bytes] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            try:
                with tls.wrap_socket(conn, server_side=True) as wrapped:
                    received.append(wrapped.recv(65536))
            except (OSError, ssl.SSLError):  # the client refused the certificate
                pass

    threading.Thread(target=serve, daemon=True).start()
    yield f"https://127.0.0.1:{server.getsockname()[1]}/hook", received
    server.close()


def test_a_webhook_whose_certificate_nobody_signed_gets_nothing(quick, self_signed_webhook):
    """Every webhook call of a process shares one TLS context (delivery.tls): it still
    checks the certificate, twice in a row, and sends no byte of the event to a server
    that fails the check."""
    url, received = self_signed_webhook
    for _ in range(2):
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            delivery.post(url, {}, {"secret": "event"})
    assert received == []


def test_a_job_that_outlived_its_lease_cannot_undo_its_successor(
    quick, queued, make_task, webhook, monkeypatch
):
    task = make_task("submitted")
    config = push.set_config(task.id, push.ConfigInput(url=webhook.url), version="0.3")
    services.start_task(task.id, actor=AGENT)
    services.emit_text(task.id, "one", actor=AGENT)
    config = PushConfig.objects.get(pk=config.pk)
    # Job A claims the config and reads its head delivery, then stalls in its POST ...
    token_a = delivery._claim(config.pk)
    assert token_a is not None
    head = PushDelivery.objects.filter(config=config).order_by("event_id").first()
    # ... past its lease: job B takes over and delivers everything.
    PushConfig.objects.filter(pk=config.pk).update(pump_until=timezone.now() - timedelta(1))
    assert delivery.run(config.pk) == "idle"
    delivered = list(PushDelivery.objects.filter(config=config).values_list("status", "attempts"))
    assert delivered and all(status == "delivered" for status, _ in delivered)
    # A's POST finally fails; its bookkeeping must not touch what B recorded.
    monkeypatch.setattr(delivery, "post", lambda *a: (_ for _ in ()).throw(httpx.ReadTimeout("")))
    delivery.attempt(config, head, token_a)
    after = list(PushDelivery.objects.filter(config=config).values_list("status", "attempts"))
    assert after == delivered
    assert len(webhook.delivered()) == len(delivered)  # each event POSTed once, in order
    assert [h.event_id for h in webhook.delivered()] == sorted(h.event_id for h in webhook.hits)


def test_a_lost_job_is_found_behind_another_configs_backlog(quick, queued, make_task):
    busy_task, lost_task = make_task("working"), make_task("submitted")
    busy = push.set_config(
        busy_task.id, push.ConfigInput(url="http://127.0.0.1:9/a"), version="0.3"
    )
    lost = push.set_config(
        lost_task.id, push.ConfigInput(url="http://127.0.0.1:9/b"), version="0.3"
    )
    for i in range(150):  # agent messages: each one owed to `busy`
        services.emit_text(busy_task.id, f"chunk {i}", actor=AGENT)
    services.start_task(lost_task.id, actor=AGENT)
    long_ago = timezone.now() - timedelta(minutes=10)
    PushDelivery.objects.filter(config=busy).update(next_attempt_at=long_ago)
    head = PushDelivery.objects.filter(config=busy).order_by("event_id").first()
    later = timezone.now() + timedelta(minutes=5)  # busy's head waits out a backoff
    PushDelivery.objects.filter(pk=head.pk).update(next_attempt_at=later)
    PushDelivery.objects.filter(config=lost).update(next_attempt_at=long_ago)
    PushConfig.objects.update(kicked_at=None)  # and no job is queued for either
    queued.clear()
    delivery.sweep()
    assert lost.pk in queued


def test_an_event_is_owed_to_webhooks_in_its_own_transaction(quick, make_task):
    """The delivery rows and the job commit with the event: no crash after the commit can
    lose a notification, and a rolled-back change owes nothing."""
    task = make_task("submitted")
    config = push.set_config(task.id, push.ConfigInput(url="http://127.0.0.1:9/a"), version="0.3")
    PushConfig.objects.filter(pk=config.pk).update(kicked_at=None)  # no job queued yet
    jobs = DBTaskResult.objects.count()
    with pytest.raises(RuntimeError), transaction.atomic():
        services.start_task(task.id, actor=AGENT)
        assert PushDelivery.objects.filter(config=config).count() == 1
        assert DBTaskResult.objects.count() > jobs
        raise RuntimeError("the change rolls back")
    assert not PushDelivery.objects.filter(config=config).exists()
    services.start_task(task.id, actor=AGENT)
    assert PushDelivery.objects.filter(config=config).count() == 1


def _owed_unscanned(config: PushConfig) -> None:
    """The config's events recorded nowhere yet (as after a recording that failed): the
    next pump finds them by scanning the task's log and records their deliveries."""
    PushDelivery.objects.filter(config=config).delete()
    PushConfig.objects.filter(pk=config.pk).update(scanned_through=0, kicked_at=None)


def test_a_config_deleted_while_its_log_is_scanned_is_skipped(
    quick, queued, make_task, monkeypatch
):
    """The pump read the config, then its client deleted it, then the scan records the
    deliveries the log owes it: the scan finds the config gone and records nothing. (It
    inserted them before: an IntegrityError at commit, and the job FAILED, issue 31.)"""
    task = make_task("working")
    config = push.set_config(task.id, push.ConfigInput(url="http://127.0.0.1:9/a"), version="0.3")
    for i in range(3):
        services.emit_text(task.id, f"line {i}", actor=AGENT)
    _owed_unscanned(config)
    scan = delivery._scan
    errors: list[BaseException] = []

    def delete_meanwhile() -> None:  # the client's delete, on its own connection
        try:
            assert push.delete_config(task.id, config.config_id, actor=None)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    def scan_after_a_delete(scanned: PushConfig) -> bool:
        thread = threading.Thread(target=delete_meanwhile)
        thread.start()
        thread.join(60)
        assert not thread.is_alive() and not errors, errors
        return scan(scanned)

    monkeypatch.setattr(delivery, "_scan", scan_after_a_delete)
    assert delivery.run(config.pk) == "gone"
    assert not PushConfig.objects.filter(pk=config.pk).exists()
    assert not PushDelivery.objects.exists()


def test_a_config_deleted_between_its_scan_and_its_attempt_ends_the_job_as_gone(
    quick, queued, make_task, monkeypatch
):
    """The scan recorded the deliveries, then the client deleted the config (and them):
    the job's lease is gone with the row, and the job says the config is gone — not that
    another job took its lease (it said "lost": CI, 2026-11-29)."""
    task = make_task("working")
    config = push.set_config(task.id, push.ConfigInput(url="http://127.0.0.1:9/a"), version="0.3")
    services.emit_text(task.id, "line", actor=AGENT)
    _owed_unscanned(config)
    heartbeat = delivery._heartbeat

    def delete_first(config_pk: int, token: str) -> bool:
        assert PushDelivery.objects.filter(config_id=config_pk).exists()  # the scan's
        assert push.delete_config(task.id, config.config_id, actor=None)
        return heartbeat(config_pk, token)

    monkeypatch.setattr(delivery, "_heartbeat", delete_first)
    assert delivery.run(config.pk) == "gone"
    assert not PushDelivery.objects.filter(config_id=config.pk).exists()


def _delete_and_pump_at_once(task_id: str, config: PushConfig) -> dict[str, object]:
    """The client's delete and a delivery job, released together on two connections;
    what each returned (or raised)."""
    barrier = threading.Barrier(2)
    results: dict[str, object] = {}

    def run(name: str, call) -> threading.Thread:
        def body() -> None:
            try:
                barrier.wait()
                results[name] = call()
            except BaseException as exc:  # asserted on by the test
                results[name] = exc
            finally:
                connection.close()

        return threading.Thread(target=body)

    threads = [
        run("job", lambda: delivery.run(config.pk)),
        run("delete", lambda: push.delete_config(task_id, config.config_id, actor=None)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results


@pytest.mark.postgres
def test_configs_deleted_while_their_jobs_scan_are_deleted_and_skipped(quick, queued, make_task):
    """Deletes and scans at the same instant, on separate connections, ten times: each
    delete succeeds (with any deliveries a scan recorded just before it) and each job ends
    without an error, whichever commits first."""
    for round_ in range(10):
        task = make_task("working")
        config = push.set_config(
            task.id, push.ConfigInput(url="http://127.0.0.1:9/a"), version="0.3"
        )
        for i in range(30):
            services.emit_text(task.id, f"line {i}", actor=AGENT)
        _owed_unscanned(config)
        results = _delete_and_pump_at_once(task.id, config)
        assert results["delete"] is True, (round_, results)
        assert results["job"] in ("gone", "waiting", "idle"), (round_, results)
        assert not PushDelivery.objects.filter(config_id=config.pk).exists()
