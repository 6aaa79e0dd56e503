"""bench/scale.py's fill: a realistic mix of tasks written in bulk (PostgreSQL COPY, SQLite
executemany in large transactions), never through the services — a million tasks through
them would take hours.

Why the rows are what the services write: each kind of task (completed with an artifact,
completed, failed, canceled, rejected, working, waiting for input, paused by a client,
parked by an agent) is first made once through `a2a.services`, as a client and an agent
would make it, and its rows are read back from every table a task has rows in (the task,
its messages, artifacts, suspensions, TaskEvents, and the AG-UI projection's ViewTask,
Interrupt and AguiEvent rows). Those rows are the templates: each filled task is a copy of
one, with a new task id, context id, suspension handle, tenant, event name (a parked
task's), new integer ids, and every timestamp moved (columns and the ISO strings inside
the JSON) to the copy's own time. So the JSON shapes are the services' own, whatever they
become. A finished copy is out of the live view, as the projection leaves it (in_view
false, its EVICTION delta logged), and was finished between one hour and ninety days ago;
open ones changed within the last week.

Not filled: run leases and job rows (the runtime's; a filled working task has no run in
flight), receipts of idempotent sends, and due rows (a2a_projectiondue: a filled task is
projected, its ViewTask's cursor — task_version, event_id — pointing at its own copy's last
event). The templates are read back as soon as the services made them, so the process
that imports this module projects on the committing thread (TASKDECK_PROJECTION=sync,
docs/design/projection-after-commit.md, D8); the served Daphne keeps the default
(bench/_harness.py `served`).
"""

from __future__ import annotations

import json
import os
import random
import re
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

# before Django is set up (bench/scale.py imports this module first): see the docstring
os.environ.setdefault("TASKDECK_PROJECTION", "sync")

# (table, column holding the task id); the order rows are written in
TABLES = (
    ("a2a_task", "id"),
    ("a2a_message", "task_id"),
    ("a2a_artifact", "task_id"),
    ("a2a_suspension", "task_id"),
    ("a2a_taskevent", "task_id"),
    ("agui_viewtask", "task_id"),
    ("agui_interrupt", "task_id"),
    ("agui_aguievent", "task_id"),
    ("agui_searchdoc", "task_id"),
)
# integer primary keys a copy gets anew, and the columns that point at them
SERIAL = (
    "a2a_message", "a2a_artifact", "a2a_suspension", "a2a_taskevent", "agui_aguievent",
    "agui_searchdoc",
)  # fmt: skip
# columns the database computes (PostgreSQL's search vector): never copied, made anew
GENERATED = {("agui_searchdoc", "search")}
POINTERS = {
    ("a2a_task", "status_message_id"): "a2a_message",
    ("a2a_task", "current_suspension_id"): "a2a_suspension",
    ("agui_viewtask", "event_id"): "a2a_taskevent",  # the projection's cursor
}
TEMPLATE_TENANT = "scale-template"
TEMPLATE_EVENT = "scale.template.event"
ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?")
MARK = "\x01"  # tokens in a template's text: \x01name\x01

# the mix, per million: 94 % finished, then open ones; parked: 50,000 at a million
MIX = (
    ("completed_artifact", 300_000),
    ("completed", 290_000),
    ("completed_after_input", 100_000),  # asked for input, was answered, then completed
    ("failed", 130_000),
    ("canceled", 80_000),
    ("rejected", 40_000),
    ("working", 5_000),
    ("input", 3_000),
    ("paused", 2_000),
    ("parked", 50_000),
)
FINISHED = {
    "completed_artifact",
    "completed",
    "completed_after_input",
    "failed",
    "canceled",
    "rejected",
}


def make_templates(tenant_actor, agent) -> dict[str, str]:
    """One task of each kind in MIX through the services; kind -> task id."""
    from a2a import services
    from agui import projector

    def new(kind: str) -> str:
        text = f"{kind} job: render the quarterly report for region 7"
        msg = services.IncomingMessage(
            message_id=f"tmpl-{kind}-{uuid.uuid4()}", parts=[{"kind": "text", "text": text}]
        )
        return services.create_task(msg, actor=tenant_actor, skill="batch").id

    made = {}
    for kind, _ in MIX:
        tid = made[kind] = new(kind)
        if kind in ("canceled", "rejected"):
            if kind == "canceled":
                services.cancel_task(tid, actor=tenant_actor, reason="no longer needed")
            else:
                services.reject_task(tid, actor=agent, reason="out of scope", text="Not mine.")
            continue
        services.start_task(tid, actor=agent, text="On it.")
        services.report_progress(tid, 3, 10, actor=agent)
        if kind == "completed_after_input":
            services.request_input(
                tid,
                actor=agent,
                explanation="Approve the figures?",
                request={"fields": [{"name": "comment", "type": "string", "required": True}]},
            )
            answer = services.IncomingMessage(
                message_id=f"tmpl-answer-{uuid.uuid4()}",
                parts=[{"kind": "text", "text": "The figures look right."}],
            )
            services.add_message(tid, answer, actor=tenant_actor)
        if kind.startswith("completed"):
            services.emit_text(tid, "Rendered 12 pages, checking the figures.", actor=agent)
            if kind == "completed_artifact":
                services.add_artifact(
                    tid,
                    actor=agent,
                    name="report.md",
                    parts=[{"kind": "text", "text": "# Report\n" * 20}],
                )
            services.complete_task(tid, actor=agent, text="Done: the report is ready.")
        elif kind == "failed":
            services.fail_task(tid, actor=agent, reason="upstream timed out", text="Gave up.")
        elif kind == "input":
            services.request_input(
                tid,
                actor=agent,
                explanation="Which region should the report cover?",
                request={"fields": [{"name": "region", "type": "string", "required": True}]},
            )
        elif kind == "paused":
            services.pause_task(tid, actor=tenant_actor, reason="hold for review")
        elif kind == "parked":
            services.park_task(
                tid,
                actor=agent,
                reason="waiting for the build",
                conditions={"onEvent": TEMPLATE_EVENT},
                summary="build 1234 running",
            )
    # finished tasks leave the live view as the projection makes them leave it (its
    # eviction: in_view false, a STATE_DELTA remove logged)
    projector.evict_finished(datetime.now(UTC) + timedelta(days=1), limit=10_000)
    return made


@dataclass
class Template:
    kind: str
    base: datetime  # the template task's created_at
    stamps: list[tuple[float, str]] = field(default_factory=list)  # (offset s, style)
    blocks: dict[str, list[str]] = field(default_factory=dict)  # table -> chunks
    rows: dict[str, int] = field(default_factory=dict)  # table -> rows per copy
    columns: dict[str, list[str]] = field(default_factory=dict)


def _style(text: str) -> str:
    """How a timestamp was written: T or space, fraction digits, zone suffix."""
    m = re.match(r"\d{4}-\d\d-\d\d([T ])\d\d:\d\d:\d\d(?:\.(\d+))?(.*)$", text)
    return f"{m[1]}|{len(m[2] or '')}|{m[3]}"


def _render(dt: datetime, style: str) -> str:
    sep, digits, zone = style.split("|")
    text = dt.strftime(f"%Y-%m-%d{sep}%H:%M:%S")
    if int(digits):
        text += f".{dt.microsecond:06d}"[: int(digits) + 1]
    return text + ("Z" if zone == "Z" else "+00:00" if zone else "")


def _parse(text: str) -> datetime:
    dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def _copy_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def read_template(connection, kind: str, task_id: str) -> Template:
    """The template task's rows as COPY text with tokens (see the module's docstring)."""
    sqlite = connection.vendor == "sqlite"
    with connection.cursor() as cur:
        cur.execute("SELECT created_at, context_id FROM a2a_task WHERE id = %s", [task_id])
        created, context_id = cur.fetchone()
        base = _parse(created) if isinstance(created, str) else created
        base = base if base.tzinfo else base.replace(tzinfo=UTC)
        handles = []
        cur.execute("SELECT handle FROM a2a_suspension WHERE task_id = %s", [task_id])
        handles = [h for (h,) in cur.fetchall()]
        local_ids: dict[str, dict[int, int]] = {t: {} for t in SERIAL}
        tpl = Template(kind, base)
        stamp_index: dict[tuple[float, str], int] = {}

        def stamp_token(text: str) -> str:
            key = (round((_parse(text) - base).total_seconds(), 6), _style(text))
            if key not in stamp_index:
                stamp_index[key] = len(tpl.stamps)
                tpl.stamps.append(key)
            return f"{MARK}D{stamp_index[key]}{MARK}"

        names = {task_id: "T", context_id: "C", TEMPLATE_TENANT: "O", TEMPLATE_EVENT: "E"}
        for i, h in enumerate(handles):
            names[h] = f"H{i}"
        words = re.compile(
            "|".join(sorted(map(re.escape, names), key=len, reverse=True)) + "|" + ISO.pattern
        )

        def tokens(text: str) -> str:
            return words.sub(
                lambda m: f"{MARK}{names[m[0]]}{MARK}" if m[0] in names else stamp_token(m[0]),
                text,
            )

        rows_of: dict[str, list] = {}
        for table, column in TABLES:
            order = " ORDER BY id" if table in SERIAL else ""
            cur.execute(f"SELECT * FROM {table} WHERE {column} = %s{order}", [task_id])
            keep = [i for i, d in enumerate(cur.description) if (table, d[0]) not in GENERATED]
            tpl.columns[table] = [cur.description[i][0] for i in keep]
            rows_of[table] = [tuple(row[i] for i in keep) for row in cur.fetchall()]
            if table in SERIAL:
                for j, row in enumerate(rows_of[table]):
                    local_ids[table][row[0]] = j
        for table, _ in TABLES:
            cols = tpl.columns[table]
            lines = []
            for row in rows_of[table]:
                cells = []
                for col, value in zip(cols, row, strict=True):
                    if col == "id" and table in SERIAL:
                        cells.append(f"{MARK}I{table}:{local_ids[table][value]}{MARK}")
                    elif (table, col) in POINTERS and value is not None:
                        target = POINTERS[(table, col)]
                        cells.append(f"{MARK}I{target}:{local_ids[target][value]}{MARK}")
                    elif value is None:
                        cells.append("\\N")
                    elif isinstance(value, bool):
                        # COPY's text for PostgreSQL; SQLite keeps Django's booleans as 1/0
                        # (a 't' there is a string no `in_view = 1` or `pending = 1` matches:
                        # the open copies were on no board and in no inbox)
                        cells.append(("1" if value else "0") if sqlite else ("t" if value else "f"))
                    elif isinstance(value, datetime):
                        # SQLite's are naive UTC: written back as Django writes them
                        cells.append(
                            stamp_token(
                                value.astimezone(UTC).isoformat()
                                if value.tzinfo
                                else value.replace(tzinfo=UTC).isoformat()
                            )
                        )
                    elif isinstance(value, (dict, list)):
                        cells.append(tokens(_copy_escape(json.dumps(value))))
                    elif isinstance(value, int):
                        cells.append(str(value))
                    else:
                        text = str(value)
                        if (
                            sqlite
                            and col.endswith(("_at", "timestamp", "deadline"))
                            and (re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)?", text))
                        ):
                            text = text.replace(" ", "T")  # as a token; written back below
                            cells.append(stamp_token(text + "+00:00"))
                        else:
                            cells.append(tokens(_copy_escape(text)))
                lines.append("\t".join(cells))
            tpl.rows[table] = len(lines)
            tpl.blocks[table] = re.split(
                f"{MARK}([^{MARK}]+){MARK}", "".join(line + "\n" for line in lines)
            )
    return tpl


@dataclass
class Filler:
    """Writes copies of the templates; keeps the next integer id of each table."""

    connection: Any
    templates: dict[str, Template]
    tenants: list[str]
    next_id: dict[str, int] = field(default_factory=dict)
    parked_events: list[str] = field(default_factory=list)  # events that wake one each
    made: int = 0

    def __post_init__(self) -> None:
        total = sum(n for _, n in MIX)
        self.weights = [n / total for _, n in MIX]
        self.kinds = [k for k, _ in MIX]

    def copy(self, tpl: Template, out: dict[str, list[str]], now: datetime) -> None:
        """Append one copy of `tpl` to `out` (table -> text chunks)."""
        self.made += 1
        n = self.made
        if tpl.kind in FINISHED:
            at = now - timedelta(seconds=3600 + random.random() * 89 * 86400)
        else:
            at = now - timedelta(seconds=60 + random.random() * 7 * 86400)
        values = {
            "T": str(uuid.uuid4()),
            "C": str(uuid.uuid4()),
            "O": self.tenants[n % len(self.tenants)],
            "E": f"scale.parked.{n}",
            "H0": f"suspend-{uuid.uuid4()}",
        }
        if tpl.kind == "parked":
            self.parked_events.append(values["E"])
        for i, (offset, style) in enumerate(tpl.stamps):
            values[f"D{i}"] = _render(at + timedelta(seconds=offset), style)
        for table in SERIAL:
            start = self.next_id[table]
            for j in range(tpl.rows[table]):
                values[f"I{table}:{j}"] = str(start + j)
            self.next_id[table] = start + tpl.rows[table]
        for table, _ in TABLES:
            chunks = tpl.blocks[table]
            parts = out[table]
            for k, chunk in enumerate(chunks):
                parts.append(values[chunk] if k % 2 else chunk)

    def fill(self, count: int, batch: int = 20_000, progress=None) -> None:
        """Add `count` tasks in the mix, `batch` to a transaction."""
        from django.db import transaction

        now = datetime.now(UTC)
        done = 0
        with self.connection.cursor() as cur:  # the services wrote rows since the last fill
            for table in SERIAL:
                cur.execute(f"SELECT COALESCE(MAX(id), 0) FROM {table}")
                self.next_id[table] = cur.fetchone()[0] + 1
        while done < count:
            n = min(batch, count - done)
            out: dict[str, list[str]] = {t: [] for t, _ in TABLES}
            for kind in random.choices(self.kinds, self.weights, k=n):
                self.copy(self.templates[kind], out, now)
            with transaction.atomic():
                for table, _ in TABLES:
                    self.write(table, "".join(out[table]))
            done += n
            if progress:
                progress(done)
        self.reset_sequences()

    def write(self, table: str, text: str) -> None:
        if not text:
            return
        cols = next(iter(self.templates.values())).columns[table]
        with self.connection.cursor() as cur:
            if self.connection.vendor == "postgresql":
                names = ", ".join(f'"{c}"' for c in cols)
                raw = cur.cursor  # psycopg's own cursor: COPY
                with raw.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
                    copy.write(text)
            else:
                rows = [_sqlite_row(line) for line in text.split("\n") if line]
                marks = ", ".join("?" * len(cols))
                names = ", ".join(f'"{c}"' for c in cols)
                cur.cursor.executemany(f"INSERT INTO {table} ({names}) VALUES ({marks})", rows)

    def reset_sequences(self) -> None:
        if self.connection.vendor != "postgresql":
            return  # SQLite's AUTOINCREMENT follows the largest id written
        with self.connection.cursor() as cur:
            for table in SERIAL:
                cur.execute(
                    f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                    f"(SELECT MAX(id) FROM {table}))"
                )


_UNESCAPE = re.compile(r"\\(.)")
_SQLITE_STAMP = re.compile(r"^(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d(?:\.\d+)?)\+00:00$")


def _sqlite_cell(cell: str):
    if cell == "\\N":
        return None
    if m := _SQLITE_STAMP.match(cell):  # Django's SQLite datetime: naive UTC, a space
        return f"{m[1]} {m[2]}"
    if "\\" in cell:
        return _UNESCAPE.sub(lambda m: {"t": "\t", "n": "\n", "r": "\r"}.get(m[1], m[1]), cell)
    return cell


def _sqlite_row(line: str) -> list:
    return [_sqlite_cell(c) for c in line.split("\t")]
