"""Does a call cost the same on an empty database and after a million tasks? Fills a
throwaway database in bulk with a realistic mix (bench/_scale_fill.py says what and how),
then measures each operation over real HTTP at empty, 10 % and full. Prints figures;
asserts nothing.

    make bench-scale       # SQLite, 100,000 tasks
    .venv/bin/python bench/scale.py [--scale-out] [--tasks N] [--calls 40] [--steps 0,0.1,1]
        [--ops get,list,...] [--explain] [--keep-db]

--scale-out: PostgreSQL + Redis (its own database `taskdeck_bench_scale`, Redis db 7), and
--tasks defaults to 1,000,000; otherwise SQLite in a temporary directory, 100,000. The
fill's time is printed at each step. One Daphne (bench/_harness.py) serves every call;
it is stopped while the bench fills and started again (so each size's figures start
from a fresh process: --warmup calls first, not counted).

Operations, each --calls times one at a time (median and p95 per size, and full/empty;
the issue's target is at most 1.25x):
- get: GetTask (JSON-RPC, A2A 1.0) of a task made before the first size;
- list / list-deep / list-state / list-state-deep: ListTasks {pageSize: 50}, first page
  and the page after 20 pages (following pageToken), without and with a state filter
  (TASK_STATE_COMPLETED), as one tenant's API key (restricted: its own tasks);
- send-blocking: SendMessage to the `tck` agent, which completes at once (run in the web
  process: a2a/runtime/inline.py); send: the same with returnImmediately (the run is a
  worker's; none runs here, so the jobs only queue);
- pause-resume: PauseTask then ResumeTask of a working task (one pair per call);
- wake: POST /api/events naming the event one parked task waits for (the fill parks
  ~50,000 per million, each on its own event; at every size the bench parks its own
  --calls tasks through the services and wakes those, so each size wakes the same way);
- board: the dashboard's AG-UI socket (/ws/agui/, a signed-in operator's session):
  connect until its opening STATE_SNAPSHOT arrives;
- board-whole: the same socket until the board holds all it shows (the snapshot, the
  tasks needing a person that did not fit it, their requests, then the counts event);
  once per size it prints what the board holds against the database (issue 29: every
  task waiting for input or paused by an operator on the board, counts equal the inbox);
- inbox, audit: those dashboard pages (GET, the operator's session); the board, the
  inbox and the audit show the same at every size (`prepare`: WAITING approvals, a page
  and more, RESOLVED answered ones, its resolved list and more, HELD operator pauses, more
  than the snapshot's budget, and AUDITED API pauses and resumes, more than the audit's
  page), so full/empty is the cost of the database's size, not of a fuller page;
- timeline: the task page of one task with 2,000 timeline entries (progress reports);
- search: the history page (/history, agui/search.py), the calls cycling through
  SEARCHES: a task's whole id and its short id (a task made before the fill), a word every
  filled task holds, a word of the rejected ones with a state filter, who acted with a
  state filter, a word no task holds, a phrase, a filter alone, and a page half-way down
  the index (an `after` cursor) — the issue's target is 300 ms at a million tasks.
"SQL/call": the statements of one such call made in this process through Django's test
client (JSON-RPC and pages; the socket's opening reads for `board`), counted once per
size on every thread (the JSON-RPC door runs the ORM on a thread pool); `-` for a
blocking send, whose run happens only in a served event loop. --explain: after each
size's figures, each of those SELECTs once more, one line each: on PostgreSQL EXPLAIN
ANALYZE's time, top node, scans and rows; on SQLite its time run alone, its rows and
EXPLAIN QUERY PLAN (so the statement whose cost grows with the database shows).
After each fill: the task counts recounted (`manage.py recount_tasks`: the fill wrote
around the services), then VACUUM (ANALYZE) on PostgreSQL, ANALYZE on SQLite, as a database that has
run for a while has been (statistics; the visibility map index-only scans rely on).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import _harness
import _scale_fill
from _harness import free_port, send_params, start_server

PG_DB = "taskdeck_bench_scale"
REDIS_URL = "redis://127.0.0.1:6379/7"
TENANTS = 5
OPS = (
    "get",
    "list",
    "list-deep",
    "list-state",
    "list-state-deep",
    "send-blocking",
    "send",
    "pause-resume",
    "wake",
    "board",
    "board-whole",
    "inbox",
    "audit",
    "timeline",
    "search",
)
DEEP_PAGES = 20
TIMELINE_ENTRIES = 2000


def _meminfo(field: str) -> int:
    """A /proc/meminfo figure in kB (0 where there is none)."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name == field:
            return int(rest.split()[0])
    return 0


def environment(args) -> dict[str, str]:
    """This process's and the server's environment; call before django.setup(). On
    PostgreSQL a fresh database `args.db`, or with --reuse the one a run with --keep-db
    left (made if it does not exist)."""
    sys.path.insert(0, str(_harness.ROOT))
    var = tempfile.mkdtemp(prefix="taskdeck-bench-scale-")
    env = {
        "DJANGO_SETTINGS_MODULE": "dashboard.settings",
        "DJANGO_SECRET_KEY": "bench-only",
        "TASKDECK_VAR_DIR": var,
        "TASKDECK_DEBUG": "0",
        "TASKDECK_RATE_CREATE": "0",
        # the board ops open a socket per call (45 of each at the default --calls): more than
        # the default 60 opens a minute a user may make
        "TASKDECK_RATE_SOCKET": "0",
        "TASKDECK_EXTRA_AGENTS": "a2a.runtime.agents.tck",
    }
    if args.scale_out:
        if not (args.reuse and _harness.db_exists(args.db)):
            _harness.fresh_db(args.db)
        env.update(DATABASE_URL=_harness.pg_url(args.db), REDIS_URL=args.redis)
    os.environ.update(env)
    return dict(os.environ)


class Bench:
    """What the measurements share: keys, the session, the tasks they act on."""

    def __init__(self, args) -> None:
        from django.contrib.auth import get_user_model
        from django.test import Client

        from a2a import api_keys
        from a2a.auth import authenticate

        self.args = args
        self.tokens = {}
        run = uuid.uuid4().hex[:8]  # key names are unique: a --reuse run makes its own

        def key(owner: str) -> str:
            return api_keys.create_key(f"{owner}-{run}", ["read", "write"], owner=owner)[1]

        for k in range(TENANTS):
            self.tokens[f"tenant-{k}"] = key(f"tenant-{k}")
        template_token = key(_scale_fill.TEMPLATE_TENANT)
        self.template_actor = authenticate(f"Bearer {template_token}").actor
        self.token = self.tokens["tenant-0"]
        self.headers = {"Authorization": f"Bearer {self.token}", "A2A-Version": "1.0"}
        user = get_user_model().objects.filter(username="scale").first()  # --reuse
        user = user or get_user_model().objects.create_superuser("scale", "scale@example.com", "x")
        client = Client(HTTP_HOST="127.0.0.1")  # an allowed host
        client.force_login(user)
        self.session = client.cookies["sessionid"].value
        self.client = client  # in-process: query counts
        self.port = 0
        self.http = None

    # -- HTTP ---------------------------------------------------------------------------

    def rpc(self, method: str, params: dict) -> dict:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        r = self.http.post("/a2a/", json=body, headers=self.headers)
        answer = r.json()
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer["result"]

    def page(self, path: str) -> None:
        r = self.http.get(path, cookies={"sessionid": self.session})
        if r.status_code != 200:
            raise RuntimeError(f"GET {path}: HTTP {r.status_code}")

    def board(self) -> float:
        """Seconds from opening the socket to its STATE_SNAPSHOT. Closed without waiting
        for the server's close frame: it is still sending the window's activities."""
        from websockets.sync.client import connect

        url = f"ws://127.0.0.1:{self.port}/ws/agui/"
        headers = {"Cookie": f"sessionid={self.session}", "Origin": f"http://127.0.0.1:{self.port}"}
        start = time.perf_counter()
        with connect(
            url, additional_headers=headers, max_size=None, open_timeout=60, close_timeout=0.01
        ) as ws:
            while json.loads(ws.recv(timeout=60)).get("type") != "STATE_SNAPSHOT":
                pass
            return time.perf_counter() - start

    def board_whole(self) -> float:
        """Seconds from opening the socket until the board holds all it will show: the
        snapshot, then the tasks that need a person which did not fit it (sent as `add`
        deltas), their requests, up to the counts event that comes last. What the board
        then holds is kept in `self.held` (view, counts) for `coverage`."""
        import jsonpatch
        from websockets.sync.client import connect

        url = f"ws://127.0.0.1:{self.port}/ws/agui/"
        headers = {"Cookie": f"sessionid={self.session}", "Origin": f"http://127.0.0.1:{self.port}"}
        start = time.perf_counter()
        state: dict = {}
        with connect(
            url, additional_headers=headers, max_size=None, open_timeout=60, close_timeout=0.01
        ) as ws:
            while True:
                event = json.loads(ws.recv(timeout=60))
                kind = event.get("type")
                if kind == "STATE_SNAPSHOT":
                    state = event["snapshot"]
                elif kind == "STATE_DELTA":
                    jsonpatch.apply_patch(state, event["delta"], in_place=True)
                elif kind == "CUSTOM" and event.get("name") == "taskdeck.counts":
                    took = time.perf_counter() - start
                    self.held = (state.get("view", {}), event["value"])
                    return took


def coverage(bench: Bench) -> str:
    """Issue 29's check on the board `board-whole` last opened: every task waiting for a
    person (input-required) or paused by an operator (paused-by-client) is on it, its
    pending requests too, and the counts it shows equal the database's (COUNT over the
    tasks; pending input requests, as the inbox lists them)."""
    from a2a.models import Task
    from agui.models import PENDING, Interrupt

    view, counts = bench.held
    held: dict[str, int] = {}
    for entry in view.get("tasks", {}).values():
        held[entry["status"]] = held.get(entry["status"], 0) + 1
    pending = len(view.get("pendingInterrupts", {}))
    parts = []
    for state in ("input-required", "paused-by-client"):
        in_db = Task.objects.filter(state=state).count()
        parts.append(
            f"{state}: board holds {held.get(state, 0):,}, counts say "
            f"{counts['states'].get(state, 0):,}, database {in_db:,}"
        )
    waiting = Interrupt.objects.filter(PENDING, kind=Interrupt.Kind.INPUT_REQUEST).count()
    parts.append(
        f"requests: board holds {pending:,}, counts (Inbox badge) say {counts['requests']:,}"
        f"{'+' if counts.get('requestsMore') else ''}, inbox/database {waiting:,}"
    )
    parts.append(f"board holds {sum(held.values()):,} tasks in all")
    return "; ".join(parts)


BASE = (DEEP_PAGES + 2) * 50  # the measuring tenant's completed tasks at every size
WAITING = 60  # approvals waiting at every size: more than the inbox's page (50)
RESOLVED = 60  # approvals answered at every size: more than the inbox's resolved list (50)
HELD = 300  # operator pauses of ~2.5 KB at every size: more than the board's snapshot holds
AUDITED = 60  # API pause+resume pairs at every size: more than the audit's page (100 lines)
APPROVAL = {
    "title": "Approve the rollout",
    "fields": [{"name": "decision", "type": "approval", "required": True}],
}


def prepare(bench: Bench) -> dict:
    """Tasks every size's calls act on, made once before the first size: BASE completed
    tasks of the measuring tenant (through the services: so "empty" has enough for a
    deep page), working ones to pause, the task with the long timeline, and what fills
    the board and the inbox at every size (WAITING, RESOLVED, HELD)."""
    from a2a import services
    from a2a.auth import authenticate

    agent = services.Actor("agent", "scale")
    mine = authenticate(f"Bearer {bench.token}").actor
    done = []
    for i in range(BASE):
        msg = services.IncomingMessage(
            message_id=f"base-{i}", parts=[{"kind": "text", "text": f"base job {i}"}]
        )
        tid = services.create_task(msg, actor=mine, skill="batch").id
        services.start_task(tid, actor=agent)
        services.complete_task(tid, actor=agent, text="done")
        done.append(tid)
    done = done[-20:]
    working = [
        bench.rpc("SendMessage", send_params(f"scale-idle-{uuid.uuid4()}"))["task"]["id"]
        for _ in range(4)
    ]
    msg = services.IncomingMessage(
        message_id=f"long-{uuid.uuid4()}", parts=[{"kind": "text", "text": "a long story"}]
    )
    long = services.create_task(msg, actor=bench.template_actor, skill="batch").id
    services.start_task(long, actor=agent)
    for i in range(TIMELINE_ENTRIES - 2):
        services.report_progress(long, i % 1000, 1000, actor=agent)
    # The board and the inbox show the same at every size, so that their figures compare
    # the database's size and not a fuller page: WAITING approvals (more than an inbox
    # page) and HELD operator pauses (more than a snapshot's byte budget holds).
    operator = services.Actor("operator", "scale")
    for i in range(WAITING):
        msg = services.IncomingMessage(
            message_id=f"wait-{uuid.uuid4()}", parts=[{"kind": "text", "text": f"rollout {i}"}]
        )
        tid = services.create_task(msg, actor=bench.template_actor, skill="approval").id
        services.start_task(tid, actor=agent)
        services.request_input(tid, actor=agent, explanation="Approve?", request=APPROVAL)
    # ... and RESOLVED answered ones: the inbox lists the 50 last resolved below its page,
    # which an empty database had none of (its page was a third the size of a full one's)
    for i in range(RESOLVED):
        msg = services.IncomingMessage(
            message_id=f"done-{uuid.uuid4()}", parts=[{"kind": "text", "text": f"rollout {i}"}]
        )
        tid = services.create_task(msg, actor=bench.template_actor, skill="approval").id
        services.start_task(tid, actor=agent)
        asked = services.request_input(tid, actor=agent, explanation="Approve?", request=APPROVAL)
        answer = {"decision": {"decision": "approve", "comment": f"ship {i}"}}
        services.answer_input(tid, asked["requestId"], answer, actor=operator, via="bench")
    for i in range(HELD):
        msg = services.IncomingMessage(
            message_id=f"held-{uuid.uuid4()}", parts=[{"kind": "text", "text": f"export {i}"}]
        )
        tid = services.create_task(msg, actor=bench.template_actor, skill="batch").id
        services.start_task(tid, actor=agent)
        services.pause_task(tid, actor=operator, reason="held for the freeze " * 80)
    # ... and AUDITED pauses and resumes by an API key: the audit's first page is a full
    # page at every size (an empty database's held the few API actions the templates made)
    msg = services.IncomingMessage(
        message_id=f"audited-{uuid.uuid4()}", parts=[{"kind": "text", "text": "audited"}]
    )
    tid = services.create_task(msg, actor=bench.template_actor, skill="batch").id
    services.start_task(tid, actor=agent)
    for i in range(AUDITED):
        services.pause_task(tid, actor=bench.template_actor, reason=f"audit {i}")
        services.resume_task(tid, actor=bench.template_actor)
    return {"done": done, "working": working, "long": long}


def parked_tasks(bench: Bench, n: int) -> list[str]:
    """n tasks parked by their agent, each until its own event; the event names."""
    from a2a import services

    agent = services.Actor("agent", "scale")
    names = []
    for _ in range(n):
        name = f"scale.wake.{uuid.uuid4().hex[:12]}"
        msg = services.IncomingMessage(
            message_id=f"park-{uuid.uuid4()}", parts=[{"kind": "text", "text": "wait"}]
        )
        tid = services.create_task(msg, actor=bench.template_actor, skill="batch").id
        services.start_task(tid, actor=agent)
        services.park_task(tid, actor=agent, reason="waiting", conditions={"onEvent": name})
        names.append(name)
    return names


def operations(bench: Bench, prepared: dict) -> dict:
    """op -> (call(i), in-process replay for the query count or None)."""
    tenant_page = {"pageSize": 50}
    state_page = {"pageSize": 50, "status": "TASK_STATE_COMPLETED"}
    deep_tokens: dict[str, str] = {}
    prepared["deep"] = deep_tokens

    def deep_token(key: str, params: dict) -> str:
        if key not in deep_tokens:
            token = ""
            for _ in range(DEEP_PAGES):
                token = bench.rpc("ListTasks", {**params, "pageToken": token} if token else params)[
                    "nextPageToken"
                ]
            deep_tokens[key] = token
        return deep_tokens[key]

    def listing(params: dict, deep: str | None):
        def call(i: int) -> None:
            p = {**params, "pageToken": deep_token(deep, params)} if deep else params
            page = bench.rpc("ListTasks", p)
            assert len(page["tasks"]) == 50, page.get("totalSize")

        return call

    def get(i: int) -> None:
        bench.rpc("GetTask", {"id": prepared["done"][i % len(prepared["done"])]})

    def send_blocking(i: int) -> None:
        r = bench.rpc("SendMessage", send_params(f"tck-complete-task-{uuid.uuid4()}"))
        assert r["task"]["status"]["state"] == "TASK_STATE_COMPLETED", r

    def send(i: int) -> None:
        r = bench.rpc(
            "SendMessage", send_params(f"tck-complete-task-{uuid.uuid4()}", immediately=True)
        )
        assert "task" in r, r

    def pause_resume(i: int) -> None:
        tid = prepared["working"][i % len(prepared["working"])]
        bench.rpc("PauseTask", {"taskId": tid, "reason": "scale"})
        bench.rpc("ResumeTask", {"taskId": tid})

    def wake(i: int) -> None:
        name = prepared["wake"].pop()
        r = bench.http.post(
            "/api/events",
            json={"name": name, "payload": {}},
            headers={"Authorization": f"Bearer {bench.token_template}"},
        )
        assert r.status_code == 201 and len(r.json()["woke"]) == 1, r.text

    def searching(i: int) -> None:
        bench.page(search_paths(prepared)[i % len(SEARCHES)])

    return {
        "search": searching,
        "get": get,
        "list": listing(tenant_page, None),
        "list-deep": listing(tenant_page, "list-deep"),
        "list-state": listing(state_page, None),
        "list-state-deep": listing(state_page, "list-state-deep"),
        "send-blocking": send_blocking,
        "send": send,
        "pause-resume": pause_resume,
        "wake": wake,
        "board": lambda i: bench.board(),
        "board-whole": lambda i: bench.board_whole(),
        "inbox": lambda i: bench.page("/inbox"),
        "audit": lambda i: bench.page("/audit"),
        "timeline": lambda i: bench.page(f"/tasks/{prepared['long']}"),
    }


# the history searches (op `search`), cycled through; {id} is a task made before the fill
SEARCHES = (
    "/history?q={id}",
    "/history?q={short}",
    "/history?q=quarterly",
    "/history?q=scope&state=rejected",
    "/history?who=agent:scale&state=failed",
    "/history?q=nosuchwordanywhere",
    '/history?q="region 7"+report',
    "/history?state=finished",
    "/history?q=report&skill=batch&after={middle}",
)


def search_paths(prepared: dict) -> list[str]:
    """SEARCHES with their values; `middle`: a search document id half-way down (a deep
    page costs what the first does: keyset)."""
    if "middle" not in prepared:
        from agui.models import SearchDoc

        last = SearchDoc.objects.order_by("-id").values_list("id", flat=True).first() or 0
        prepared["middle"] = last // 2
    task = prepared["done"][0]
    values = {"id": task, "short": task[:8], "middle": prepared["middle"]}
    return [path.format(**values) for path in SEARCHES]


CAPTURED: list[str] | None = None  # the SQL of the replayed call, every thread's


def capture_queries() -> None:
    """Record every statement any thread runs while CAPTURED is a list (the JSON-RPC
    door runs the ORM on a thread pool: a per-connection capture would miss it)."""
    from django.db.backends import utils

    execute = utils.CursorWrapper._execute_with_wrappers

    def counted(self, sql, params, many, executor):
        result = execute(self, sql, params, many, executor)
        if CAPTURED is not None:
            CAPTURED.append(self.db.ops.last_executed_query(self.cursor, sql, params))
        return result

    utils.CursorWrapper._execute_with_wrappers = counted


def count_queries(bench: Bench, op: str, prepared: dict) -> tuple[int, list[str]]:
    """The queries one call of `op` makes, made in this process (Django's test client for
    HTTP; the socket's opening reads for `board`); (count, their SQL)."""
    global CAPTURED
    CAPTURED = []
    try:
        replay(bench, op, prepared)
        return (len(CAPTURED), CAPTURED) if op != "send-blocking" else (-1, [])
    finally:
        CAPTURED = None


def replay(bench: Bench, op: str, prepared: dict) -> None:
    c = bench.client
    headers = {"HTTP_AUTHORIZATION": f"Bearer {bench.token}", "HTTP_A2A_VERSION": "1.0"}

    def ok(response):
        if response.status_code not in (200, 201) or b'"error"' in response.content[:200]:
            raise RuntimeError(f"{op}: {response.status_code} {response.content[:300]!r}")

    def rpc(method, params):
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        ok(c.post("/a2a/", json.dumps(body), content_type="application/json", **headers))

    if op == "get":
        rpc("GetTask", {"id": prepared["done"][0]})
    elif op.startswith("list"):
        params = {"pageSize": 50}
        if "state" in op:
            params["status"] = "TASK_STATE_COMPLETED"
        if op.endswith("deep"):
            params["pageToken"] = prepared["deep"][op]
        rpc("ListTasks", params)
    elif op == "pause-resume":
        tid = prepared["working"][0]
        rpc("PauseTask", {"taskId": tid, "reason": "scale"})
        rpc("ResumeTask", {"taskId": tid})
    elif op == "send":
        rpc("SendMessage", send_params(f"tck-complete-task-{uuid.uuid4()}", immediately=True))
    elif op == "wake":
        name = prepared["wake"].pop()
        ok(
            c.post(
                "/api/events",
                json.dumps({"name": name, "payload": {}}),
                content_type="application/json",
                HTTP_AUTHORIZATION=f"Bearer {bench.token_template}",
            )
        )
    elif op in ("board", "board-whole"):
        from django.contrib.auth import get_user_model

        from a2a.auth import user_actor
        from agui.consumers import _bundle

        _bundle(user_actor(get_user_model().objects.get(username="scale")))
    elif op in ("inbox", "audit"):
        ok(c.get(f"/{op}"))
    elif op == "timeline":
        ok(c.get(f"/tasks/{prepared['long']}"))
    elif op == "search":
        ok(c.get(search_paths(prepared)[2]))  # the word every filled task holds


def search_sql(bench: Bench, prepared: dict) -> list[str]:
    """The statements of every search of SEARCHES (op `search` replays one of them)."""
    global CAPTURED
    out = []
    for path in search_paths(prepared):
        CAPTURED = []
        try:
            bench.client.get(path)
            out += [sql for sql in CAPTURED if "agui_searchdoc" in sql]
        finally:
            CAPTURED = None
    return out


def explain(sqls: list[str]) -> list[str]:
    """One line per SELECT: top plan node, scans, rows, time (PostgreSQL); on SQLite the
    time of one run and EXPLAIN QUERY PLAN's lines."""
    from django.db import connection

    out = []
    for sql in sqls:
        if not sql.lstrip().upper().startswith("SELECT") or "FOR UPDATE" in sql:
            continue
        short = re.sub(r"\s+", " ", sql)[:150]
        if connection.vendor == "sqlite":
            with connection.cursor() as cur:
                start = time.perf_counter()
                cur.execute(sql)
                rows = len(cur.fetchall())
                took = (time.perf_counter() - start) * 1000
                cur.execute("EXPLAIN QUERY PLAN " + sql)
                plan = "; ".join(row[-1] for row in cur.fetchall())
            out.append(f"{took:8.2f} ms  {rows} rows; {plan}  <- {short}")
            continue
        with connection.cursor() as cur:
            cur.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql)
            plan = cur.fetchone()[0]
            plan = json.loads(plan) if isinstance(plan, str) else plan
        top = plan[0]["Plan"]
        scans: list[str] = []

        def walk(node, scans=scans):
            if "Scan" in node["Node Type"]:
                where = node.get("Index Name") or node.get("Relation Name", "")
                scans.append(f"{node['Node Type']} {where} ({node.get('Actual Rows')} rows)")
            for child in node.get("Plans", []):
                walk(child)

        walk(top)
        out.append(
            f"{plan[0]['Execution Time']:8.2f} ms  {top['Node Type']}, "
            f"{top.get('Actual Rows')} rows; {'; '.join(scans)}  <- {short}"
        )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale-out", action="store_true", help="PostgreSQL + Redis")
    parser.add_argument("--tasks", type=int, default=0, help="full size (1M PG, 100k SQLite)")
    parser.add_argument("--calls", type=int, default=40, help="measured calls per op and size")
    parser.add_argument("--warmup", type=int, default=5, help="uncounted calls first")
    parser.add_argument("--steps", default="0,0.1,1", help="sizes, as fractions of --tasks")
    parser.add_argument("--ops", default=",".join(OPS))
    parser.add_argument(
        "--explain", action="store_true", help="each SELECT timed and its plan, at each size"
    )
    parser.add_argument("--keep-db", action="store_true", help="keep the filled database")
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="PostgreSQL: measure the database a --keep-db run left (migrated first; sizes "
        "below what it holds are skipped, filled up to larger ones); implies --keep-db",
    )
    parser.add_argument("--db", default=PG_DB, help=f"PostgreSQL database (default {PG_DB})")
    parser.add_argument("--redis", default=REDIS_URL, help=f"Redis URL (default {REDIS_URL})")
    args = parser.parse_args()
    args.tasks = args.tasks or (1_000_000 if args.scale_out else 100_000)
    ops = [o for o in args.ops.split(",") if o]
    if bad := [o for o in ops if o not in OPS]:
        parser.error(f"unknown operations: {', '.join(bad)}")
    steps = [float(s) for s in args.steps.split(",")]
    if args.reuse and not args.scale_out:
        parser.error("--reuse needs --scale-out (SQLite's database is a temporary file)")
    args.keep_db = args.keep_db or args.reuse
    env = environment(args)
    import django
    import httpx

    django.setup()
    import logging

    from django.core.management import call_command
    from django.db import DatabaseError, connection, transaction

    logging.getLogger("a2a.runtime.inline").setLevel(logging.ERROR)
    call_command("migrate", verbosity=0)
    capture_queries()
    mode = "PostgreSQL + Redis" if args.scale_out else "SQLite"
    print(f"$ {' '.join(sys.orig_argv)}")
    print(
        f"bench/scale.py: {mode}, full size {args.tasks:,} tasks, {args.calls} calls per "
        f"operation and size after {args.warmup} uncounted; load average "
        f"{' '.join(Path('/proc/loadavg').read_text().split()[:3])}",
        flush=True,
    )
    if args.scale_out:
        with connection.cursor() as cur:
            cur.execute("SHOW autovacuum")
            print(f"PostgreSQL's autovacuum: {cur.fetchone()[0]}", flush=True)
    bench = Bench(args)
    # the template tenant's key emits the wake events: its tasks are the parked ones
    from a2a import api_keys, services
    from a2a.models import ApiKey

    _, bench.token_template = api_keys.create_key(
        f"scale-waker-{uuid.uuid4().hex[:8]}", ["read", "write"], owner=_scale_fill.TEMPLATE_TENANT
    )
    agent = services.Actor("agent", "scale")
    made = _scale_fill.make_templates(bench.template_actor, agent)
    templates = {k: _scale_fill.read_template(connection, k, tid) for k, tid in made.items()}
    filler = _scale_fill.Filler(connection, templates, [f"tenant-{k}" for k in range(TENANTS)])
    with connection.cursor() as cur:  # --reuse: what an earlier run filled
        cur.execute("SELECT count(*) FROM a2a_task WHERE owner LIKE %s", ["key:tenant-%"])
        filler.made = cur.fetchone()[0]
    # ... besides the measuring tenant's tasks each earlier run's `prepare` made (BASE
    # completed, 4 working; one key of the tenant per run, this run's made above), so
    # that an empty database kept by --keep-db is measured again at size 0
    runs = ApiKey.objects.filter(owner="tenant-0").count() - 1
    earlier = min(filler.made, runs * (BASE + 4))
    if filler.made:
        print(f"reusing {args.db}: {filler.made:,} tasks of the filled tenants", flush=True)
    server = None
    results: dict[tuple[str, float], list[float]] = {}
    queries: dict[tuple[str, float], int] = {}
    prepared: dict = {}
    status = 0
    try:
        for step in list(steps):
            target = int(args.tasks * step)
            if filler.made - earlier > max(target * 1.05, target + BASE):  # --reuse
                print(f"size {target:,}: skipped (the database holds {filler.made:,})")
                steps.remove(step)
                continue
            if filler.made < target:
                adding = target - filler.made
                start = time.monotonic()
                filler.fill(
                    target - filler.made,
                    progress=lambda n, s=start, t=target: print(
                        f"  filled {filler.made:,}/{t:,} ({time.monotonic() - s:.0f} s)", flush=True
                    ),
                )
                took = time.monotonic() - start
                # the fill wrote around the services: count its tasks, as an operator
                # does after bulk SQL (a2a/services/counts.py)
                from a2a.services import counts

                counts.recount()
                with connection.cursor() as cur:
                    # as autovacuum leaves a database that has run for months (statistics,
                    # and the visibility map index-only scans rely on)
                    cur.execute("VACUUM (ANALYZE)" if args.scale_out else "ANALYZE")
                print(
                    f"fill to {target:,} tasks: {took:.0f} s ({took / adding * 1e6:.0f} "
                    f"us a task); VACUUM/ANALYZE {time.monotonic() - start - took:.0f} s",
                    flush=True,
                )
            port = free_port()
            server = start_server(env, port)
            bench.port = port
            bench.http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120)
            if not prepared:
                prepared = prepare(bench)
            prepared["wake"] = parked_tasks(bench, args.warmup + args.calls + 1)
            # their changes of state folded into the task counts, as the scheduler does
            # every 10 s (none runs here): else every count (ListTasks' totalSize, the
            # board's) reads them, and a reused database holds one more run's each time
            from a2a.services import counts

            while counts.compact():
                pass
            if args.scale_out:
                # What the runs so far left dead (prepare's tasks, earlier --reuse runs'
                # calls: row versions, index entries, due rows and count changes deleted)
                # is vacuumed, as autovacuum does a running database's within a minute or
                # so: this machine's PostgreSQL runs with autovacuum off, where a reused
                # database measured 1.2-1.5x slower for it (docs/production.md, "Scale").
                # Both sizes are measured so, each call's own leavings left in place.
                # Then a CHECKPOINT (superuser; skipped if refused): the pages the vacuum
                # dirtied are written now, not by a checkpoint during the measured writes
                # (blocking sends measured 1.3x slower, p95 2.5x, right after the vacuum).
                start = time.monotonic()
                with connection.cursor() as cur:
                    cur.execute("VACUUM (ANALYZE)")
                    try:
                        with transaction.atomic():
                            cur.execute("CHECKPOINT")
                    except DatabaseError as exc:
                        print(f"no CHECKPOINT: {exc}".strip())
                print(f"VACUUM (ANALYZE), CHECKPOINT: {time.monotonic() - start:.0f} s")
            # What the fill (and the vacuum) wrote reaches the disk before any call is timed:
            # commits' fsyncs would otherwise queue behind the kernel's writeback of it.
            dirty = _meminfo("Dirty")
            start = time.monotonic()
            os.sync()
            print(f"sync: {dirty:,} kB dirty, written in {time.monotonic() - start:.1f} s")
            calls = operations(bench, prepared)
            print(
                f"size {target:,} tasks (load average "
                f"{' '.join(Path('/proc/loadavg').read_text().split()[:3])}):",
                flush=True,
            )
            for op in ops:
                for i in range(args.warmup):
                    calls[op](i)
                times = []
                for i in range(args.calls):
                    t = time.perf_counter()
                    took = calls[op](i)  # a call that times itself returns its seconds
                    times.append(took if took is not None else time.perf_counter() - t)
                results[(op, step)] = times
                n, sqls = count_queries(bench, op, prepared)
                queries[(op, step)] = n
                print(
                    f"  {op:16s} p50 {statistics.median(times) * 1000:8.1f} ms  "
                    f"p95 {_harness.quantile(sorted(times), 0.95) * 1000:8.1f} ms  "
                    f"{n if n >= 0 else '-'} queries",
                    flush=True,
                )
                if args.explain:  # at each size: which statement grows with the database
                    for line in explain(search_sql(bench, prepared) if op == "search" else sqls):
                        print(f"      {line}", flush=True)
                if op == "board-whole":
                    print(f"    what the board holds: {coverage(bench)}", flush=True)
                if op == "search":  # the p50 is a mix: which of the nine kinds costs what
                    for k, path in enumerate(SEARCHES):
                        kind = times[k :: len(SEARCHES)]
                        if kind:
                            print(
                                f"    {statistics.median(kind) * 1000:8.1f} ms  {path}",
                                flush=True,
                            )
            bench.http.close()
            server.terminate()
            server.wait(timeout=30)
            server = None
        print()
        head = "".join(f"{f'{int(args.tasks * s):,}: p50 / p95':>22}" for s in steps)
        print(f"{'operation':16s}{head}{'full/empty p50':>16}{'SQL/call':>10}")
        for op in ops:
            cells = "".join(
                f"{statistics.median(results[(op, s)]) * 1000:>13.1f} / "
                f"{_harness.quantile(sorted(results[(op, s)]), 0.95) * 1000:<6.1f}"
                for s in steps
            )
            ratio = statistics.median(results[(op, steps[-1])]) / statistics.median(
                results[(op, steps[0])]
            )
            qs = "/".join(str(queries[(op, s)]) if queries[(op, s)] >= 0 else "-" for s in steps)
            print(f"{op:16s}{cells}{ratio:>15.2f}x{qs:>10}")
        print(
            f"(ms; SQL/call at each size; load average at the end "
            f"{' '.join(Path('/proc/loadavg').read_text().split()[:3])})"
        )
    except KeyboardInterrupt:
        status = 130
    finally:
        if server is not None:
            server.kill()
            server.wait()
        if args.scale_out and not args.keep_db:
            _harness.drop_db(args.db)
        elif not args.scale_out and not args.keep_db:
            shutil.rmtree(env["TASKDECK_VAR_DIR"], ignore_errors=True)
    return status


if __name__ == "__main__":
    random.seed(28)
    sys.exit(main())
