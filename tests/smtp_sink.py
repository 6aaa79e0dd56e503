"""A small SMTP server for tests, run as a process of its own on loopback.

`python tests/smtp_sink.py DIR` listens on 127.0.0.1 (a free port, printed on its first
line of stdout) and writes each message it accepts to DIR as `<n>.eml` (written to a
temporary name, then renamed: a reader never sees half a message). It speaks what
Django's SMTP backend uses: EHLO/HELO, MAIL, RCPT, DATA, RSET, NOOP, QUIT. Python 3.12
dropped `smtpd` and a new test dependency is not worth these sixty lines.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import sys
from pathlib import Path

COUNT = itertools.count(1)


async def session(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, into: Path) -> None:
    def say(line: str) -> None:
        writer.write(line.encode() + b"\r\n")

    say("220 sink ESMTP")
    sender, recipients = "", []
    while line := await reader.readline():
        verb = line.decode(errors="replace").strip().split(" ", 1)[0].upper()
        arg = line.decode(errors="replace").strip()[len(verb) :].strip()
        if verb == "EHLO":
            say("250-sink")
            say("250 8BITMIME")
        elif verb == "HELO":
            say("250 sink")
        elif verb == "MAIL":
            sender, recipients = arg, []
            say("250 OK")
        elif verb == "RCPT":
            recipients.append(arg)
            say("250 OK")
        elif verb == "DATA":
            say("354 End data with <CR><LF>.<CR><LF>")
            await writer.drain()
            body = bytearray()
            while (chunk := await reader.readline()) not in (b".\r\n", b".\n", b""):
                body += chunk[1:] if chunk.startswith(b"..") else chunk
            n = next(COUNT)
            head = f"X-Sink-From: {sender}\r\nX-Sink-To: {', '.join(recipients)}\r\n".encode()
            tmp = into / f".{n}.tmp"
            tmp.write_bytes(head + bytes(body))
            os.replace(tmp, into / f"{n}.eml")
            say("250 OK")
        elif verb in ("RSET", "NOOP"):
            say("250 OK")
        elif verb == "QUIT":
            say("221 Bye")
            await writer.drain()
            break
        else:
            say("502 Command not implemented")
        await writer.drain()
    writer.close()


async def main(into: Path) -> None:
    server = await asyncio.start_server(lambda r, w: session(r, w, into), "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1])))
