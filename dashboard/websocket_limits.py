"""A WebSocket that does not read cannot make the server buffer for it without end
(issue 31, item 2).

Daphne (autobahn on Twisted) writes each message a consumer sends into the connection's
transport at once; what the client's TCP window does not take stays in the transport's
buffer, in the web process, without limit and without telling the application (ASGI has no
back-pressure). 30 AG-UI sockets that never read, and 454 changes, took a web process from
192 to 234 MB. So the bound is applied where the bytes are held, in Daphne's protocol
(`install()`, called when dashboard.asgi is imported by a Daphne process):

- before each message a socket is sent, what its transport still holds unsent is measured;
  over TASKDECK_VIEW_SOCKET_BUFFER_BYTES (1 MiB) the message is not written and the socket
  is closed with 4008 and the reason `client not reading: send buffer over N bytes`. A
  single message never trips it (the check is on what was left before it), so a socket
  holds at most the bound plus one message (never more than 1 MiB, agui/view.py).
- the close frame queues behind what the socket holds: a client that reads again gets
  everything up to it, then the code and reason. One that does not is dropped after
  CLOSE_GRACE seconds (autobahn's close handshake timeout, for this socket only), which
  frees the buffer; the consumer hears the disconnect as for any other.
- /healthz counts them: `"websockets": {"closedNotReading": n}` (this process's).
- what the application sends to a closing socket is dropped (autobahn would raise).
- a `websocket.close` with a reason sends that reason (Daphne 4.2 passes only the code):
  the AG-UI socket's 4429 says when to retry.

It patches daphne.ws_protocol.WebSocketProtocol (daphne 4.x) and reads Twisted's transport
buffer (`dataBuffer`, `offset`, `_tempDataLen` of twisted.internet.abstract.FileDescriptor,
the same since Twisted 9): docs/upgrading.md lists what it relies on.
tests/agui/test_socket_limits.py drives it with a client that stops reading.
"""

from __future__ import annotations

import logging

from a2a import conf

log = logging.getLogger(__name__)
NOT_READING = 4008  # the close code of a socket whose client stopped reading (1008 + 3000)
CLOSE_GRACE = 10.0  # seconds a closed slow socket gets to take its close frame
_installed = False
closed_not_reading = 0  # sockets this process closed so (/healthz "websockets")


def stats() -> dict[str, int]:
    """For /healthz: how many sockets this process closed for not reading."""
    return {"closedNotReading": closed_not_reading}


def pending_bytes(transport) -> int:
    """What Twisted holds for this connection, not yet handed to the kernel."""
    held = len(getattr(transport, "dataBuffer", b"")) - getattr(transport, "offset", 0)
    return held + getattr(transport, "_tempDataLen", 0)


def _protocol_of(send):
    """Daphne's protocol of the socket whose ASGI `send` this is: Daphne hands each
    application `functools.partial(server.handle_reply, protocol)` (daphne.server
    `create_application`), so the protocol is in the partial's args; Channels' session
    middleware wraps it (`InstanceSessionWrapper.send`, the original kept as
    `real_send`). None for another server."""
    for _ in range(8):  # middleware layers, unwrapped
        for arg in getattr(send, "args", ()):
            if getattr(arg, "transport", None) is not None and hasattr(arg, "handle_reply"):
                return arg
        send = getattr(getattr(send, "__self__", None), "real_send", None)
        if send is None:
            return None
    return None


def unsent_for(send) -> int | None:
    """What Daphne holds unsent for the socket whose ASGI `send` this is (None for another
    server). Registered with agui.backpressure, which paces a socket's long opening by it
    (so a client that reads is never taken for one that does not)."""
    protocol = _protocol_of(send)
    return None if protocol is None else pending_bytes(protocol.transport)


def closing_for(send) -> bool:
    """Whether Daphne is closing, or has closed, the socket whose ASGI `send` this is:
    closed above for not reading, or by its client. Registered with agui.backpressure:
    the consumer answers nothing more for it. A client that stopped reading and went on
    asking (755 resyncs in tests/agui/test_socket_limits.py) had each one answered with
    a fresh snapshot after its socket was gone, until Daphne gave up on the consumer 10 s
    later (its application_close_timeout)."""
    protocol = _protocol_of(send)
    return protocol is not None and protocol.state in (
        protocol.STATE_CLOSING,
        protocol.STATE_CLOSED,
    )


def install() -> None:
    """Patch Daphne's WebSocket protocol as the docstring says (idempotent)."""
    global _installed
    if _installed:
        return
    from daphne.ws_protocol import WebSocketProtocol

    from agui import backpressure

    backpressure.set_reader(unsent_for)
    backpressure.set_closing(closing_for)

    handle_reply = WebSocketProtocol.handle_reply

    def limited_reply(self, message):
        kind = message.get("type")
        if kind == "websocket.send" and self.state == self.STATE_OPEN:
            bound = conf.VIEW.socket_buffer_bytes
            held = pending_bytes(self.transport)
            if held > bound:
                global closed_not_reading
                closed_not_reading += 1
                log.warning(
                    "WebSocket %s closed: not reading (%d bytes unsent)", self.client_addr, held
                )
                self.closeHandshakeTimeout = CLOSE_GRACE
                self.sendClose(
                    code=NOT_READING, reason=f"client not reading: send buffer over {bound} bytes"
                )
                return
        elif kind == "websocket.send" and self.state in (self.STATE_CLOSING, self.STATE_CLOSED):
            return  # closing (as above, or by the client): nothing more goes
        elif kind == "websocket.close" and message.get("reason") and self.state == self.STATE_OPEN:
            self.sendClose(code=message.get("code") or 1000, reason=message["reason"][:120])
            return
        handle_reply(self, message)

    WebSocketProtocol.handle_reply = limited_reply
    _installed = True
