"""Early wake-ups between Taskdeck's processes on one machine, with no service to run.

The embedded default (SQLite and the in-memory channel layer; `make run`) runs the web
server, the workers and the scheduler as separate processes, and neither SQLite nor the
in-memory layer can tell one process that another committed something: each used to find
out by polling. Here every process that waits binds a UNIX datagram socket in
WAKE_DIR/<database>/, named `<kind>-<pid>-<nonce>`, and a process that commits something
sends one small datagram to every socket of the kind:

- `jobs`: workers waiting for a job (a2a.runtime.doorbell; on PostgreSQL LISTEN/NOTIFY
  does this instead, across machines too);
- `news`: processes whose Listeners wait for task announcements (a2a.notify relays them
  into their own in-memory layer; with Redis the layer itself carries them).

Why datagram sockets in a directory, rather than loopback UDP, a FIFO or workers as
threads of the web process: the directory is the whole registry (a process that starts
appears, one that exits removes its file; a SIGKILLed one's file is removed by the first
sender that gets ECONNREFUSED); a send is one non-blocking syscall that never waits for a
slow receiver (a full inbox already holds wake-ups); the files' permissions keep other
users out, which a loopback port does not; and the processes stay separate, as they are in
a scale-out deployment, so a crash test of `make run` tests what production runs.

A wake-up only ever ends a wait early. A lost one (a receiver that started after the
send, a full inbox, WAKE_DIR "off", a platform without AF_UNIX datagrams) costs the
waiter's poll interval, never correctness: the database stays the truth.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import logging
import os
import secrets
import select
import socket
import threading
from pathlib import Path

from a2a import conf

log = logging.getLogger(__name__)

KINDS = ("jobs", "news", "acp")  # new jobs; task news; hosted ACP sessions (a2a/acp_host)
# sun_path holds 108 bytes on Linux and 104 on macOS; past this, binding is skipped
MAX_PATH_BYTES = 100
READ_BYTES = 65536


class Unavailable(Exception):
    """No local wake-ups here (switched off, no AF_UNIX datagrams, a path too long)."""


def directory() -> Path | None:
    """WAKE_DIR/<hash of the database>: processes share wake-ups only with processes on the
    same database (a test run next to `make run` hears nothing of it). None when off."""
    where = conf.RUNTIME.wake_dir
    if where.strip().lower() in ("", "off") or not hasattr(socket, "AF_UNIX"):
        return None
    from django.db import connections

    # the live connection's settings: the test runner points them at the test database
    conn = connections["default"]
    s = conn.settings_dict
    return _subdirectory(where, conn.vendor, str(s.get("NAME") or ""), s.get("HOST"), s.get("PORT"))


@functools.lru_cache(maxsize=16)
def _subdirectory(where: str, vendor: str, name: str, host: object, port: object) -> Path | None:
    """WAKE_DIR/<hash>; None for a database no other process can share (in-memory SQLite)."""
    if vendor == "sqlite":
        if not name or name == ":memory:" or "mode=memory" in name:
            return None
        identity = f"sqlite:{os.path.realpath(name)}"
    else:
        identity = f"{vendor}:{host or ''}:{port or ''}:{name}"
    return Path(where) / hashlib.sha1(identity.encode(), usedforsecurity=False).hexdigest()[:10]


class Inbox:
    """This process's socket for one kind of wake-up: bound in `directory()`, removed when
    the process exits (`close`, also run at exit)."""

    def __init__(self, kind: str) -> None:
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}")
        where = directory()
        if where is None:
            raise Unavailable("local wake-ups are off (TASKDECK_WAKE_DIR)")
        self.path = where / f"{kind}-{os.getpid()}-{secrets.token_hex(3)}"
        if len(os.fsencode(self.path)) > MAX_PATH_BYTES:
            raise Unavailable(f"socket path too long for AF_UNIX: {self.path}")
        try:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        except OSError as exc:
            raise Unavailable(f"no AF_UNIX datagram sockets: {exc}") from exc
        for attempt in range(2):  # the last process out may remove the directory meanwhile
            try:
                where.mkdir(mode=0o700, parents=True, exist_ok=True)
                self.sock.bind(str(self.path))
                break
            except FileNotFoundError as exc:
                if attempt:
                    self.sock.close()
                    raise Unavailable(f"cannot bind {self.path}: {exc}") from exc
            except OSError as exc:
                self.sock.close()
                raise Unavailable(f"cannot bind {self.path}: {exc}") from exc
        self.sock.setblocking(False)
        self.pid = os.getpid()
        _own.add(self.path.name)
        atexit.register(self.close)
        sweep(where.parent)

    def fileno(self) -> int:
        return self.sock.fileno()

    def drain(self) -> list[bytes]:
        """Whatever has arrived, without waiting."""
        got = []
        while True:
            try:
                got.append(self.sock.recv(READ_BYTES))
            except (BlockingIOError, InterruptedError):
                return got
            except OSError:  # closed under us (exit): nothing more to read
                return got

    def wait(self, timeout: float | None) -> list[bytes]:
        """Datagrams that arrive within `timeout` seconds (None: until one does); [] when
        none did. A signal handler that raises (a worker told to stop) ends the wait."""
        ready, _, _ = select.select([self.sock], [], [], timeout)
        return self.drain() if ready else []

    def close(self) -> None:
        if self.pid != os.getpid():  # a forked child's copy: the parent's file, not ours
            return
        _own.discard(self.path.name)
        self.sock.close()
        with contextlib.suppress(OSError):
            self.path.unlink()
            self.path.parent.rmdir()  # the last one out (a test database's directory)


def sweep(root: Path) -> None:
    """Remove what processes that are gone left in `root` (WAKE_DIR): the sockets of the
    SIGKILLed or SIGTERMed, and the directories of databases nobody uses any more (a test
    run's). Run when a process binds an inbox. A socket that answers a connect is alive
    and kept, as is anything this cannot judge; a directory emptied under a process about
    to bind in it is made again by that process (Inbox retries)."""
    try:
        subdirectories = [d for d in root.iterdir() if d.is_dir()]
    except OSError:
        return
    for sub in subdirectories:
        alive = False
        with contextlib.suppress(OSError):
            for entry in sub.iterdir():
                if _answers(entry):
                    alive = True
                else:
                    entry.unlink()
            if not alive:
                sub.rmdir()


def _answers(path: Path) -> bool:
    """Is a process bound to this socket? (A datagram connect sends nothing.)"""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        probe.connect(str(path))
    except (ConnectionRefusedError, FileNotFoundError):
        return False
    except OSError:
        return True  # not ours to judge (another user's, not a socket): keep it
    finally:
        probe.close()
    return True


_own: set[str] = set()  # this process's inboxes: skipped unless to_self (news: its layer has it)
_sender: dict[str, object] = {"pid": None, "sock": None}
_sender_lock = threading.Lock()


def _sending_socket() -> socket.socket:
    """One unbound, non-blocking datagram socket per process (a forked child makes its own)."""
    with _sender_lock:
        sock = _sender["sock"]
        if _sender["pid"] != os.getpid() or not isinstance(sock, socket.socket):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            sock.setblocking(False)
            _sender.update(pid=os.getpid(), sock=sock)
        return sock


def broadcast(kind: str, payload: bytes = b"", *, to_self: bool = False) -> int:
    """Send `payload` to every inbox of `kind` (this process's own too with `to_self`);
    how many took it. Never raises and never waits: a full inbox already has wake-ups
    pending, a dead process's file is removed, anything else is logged at debug level and
    skipped."""
    try:
        where = directory()
        if where is None:
            return 0
        names = os.listdir(where)
    except FileNotFoundError:  # nobody has bound an inbox yet
        return 0
    except Exception:  # a wake-up must never fail the writer that sends it
        log.debug("local wake-ups: cannot list the directory", exc_info=True)
        return 0
    prefix = f"{kind}-"
    sent = 0
    sock: socket.socket | None = None
    for name in names:
        if not name.startswith(prefix) or (name in _own and not to_self):
            continue
        path = where / name
        try:
            sock = sock or _sending_socket()
            sock.sendto(payload, str(path))
            sent += 1
        except (BlockingIOError, InterruptedError):
            continue  # its inbox is full: it has wake-ups pending already
        except (ConnectionRefusedError, FileNotFoundError):
            with contextlib.suppress(OSError):  # its process is gone (SIGKILL)
                path.unlink()
        except OSError:
            log.debug("local wake-up to %s failed", path, exc_info=True)
    return sent
