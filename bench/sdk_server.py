"""A minimal A2A server on the official a2a-sdk 1.3.0, the baseline of bench/load.py.

Run ONLY with the interop interpreter, in isolated mode so the repository's `a2a/` (our
Django app) cannot shadow the SDK's package of the same name:

    .venv-interop/bin/python -I bench/sdk_server.py --port 8010 [--database-url URL]

(`make interop-venv` installs a2a-sdk[http-server,postgresql] and uvicorn there.) What it
serves: the SDK's JSON-RPC app (A2A 1.0 methods; `A2A-Version: 1.0`) at `/`, its agent card
at /.well-known/agent-card.json, the SDK's DefaultRequestHandler with its in-memory task
store, and an AgentExecutor that completes every task at once with a text reply: the task
(submitted), then `completed` with the agent's message. One uvicorn process, its default
(pure-Python h11) HTTP protocol, access log off.

With --database-url (e.g. postgresql+asyncpg://postgres@127.0.0.1:5432/taskdeck_bench_sdk)
the task store is the SDK's DatabaseTaskStore instead: SQLAlchemy's async engine on asyncpg
with its default pool (5 connections + 10 overflow), the `tasks` table created at start-up
(the database itself must exist). Every task event is then a write to PostgreSQL, as
Taskdeck's are: the persisting peer of bench/load.py.
"""

from __future__ import annotations

import argparse
import contextlib
import logging

import uvicorn
from a2a.helpers import new_task_from_user_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from starlette.applications import Starlette


class ReplyAtOnce(AgentExecutor):
    """The task, then `completed` with one text message: the same work as Taskdeck's `tck`
    agent for a `tck-complete-task` message id (which answers "Hello from TCK")."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task or new_task_from_user_message(context.message)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.complete(updater.new_agent_message([new_text_part("Hello from TCK")]))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is not None:
            await TaskUpdater(event_queue, task.id, task.context_id).cancel()


def task_store(database_url: str):
    """The in-memory store, or with a URL the SDK's DatabaseTaskStore and its engine."""
    if not database_url:
        return InMemoryTaskStore(), None
    from a2a.server.tasks import DatabaseTaskStore
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(database_url)
    return DatabaseTaskStore(engine), engine


def app(port: int, database_url: str = "") -> Starlette:
    card = AgentCard(
        name="sdk-bench",
        description="a2a-sdk 1.3.0 baseline for bench/load.py",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(
                url=f"http://127.0.0.1:{port}/",
                protocol_binding="JSONRPC",
                protocol_version="1.0",
            )
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="reply", name="Reply", description="Replies at once", tags=["x"])],
    )
    store, engine = task_store(database_url)
    handler = DefaultRequestHandler(agent_executor=ReplyAtOnce(), task_store=store, agent_card=card)
    routes = [*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/")]

    @contextlib.asynccontextmanager
    async def lifespan(_app):
        if engine is not None:  # the table before the first request, on uvicorn's loop
            await store.initialize()
        yield
        if engine is not None:
            await engine.dispose()

    return Starlette(routes=routes, lifespan=lifespan)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8010)
    parser.add_argument(
        "--database-url", default="", help="SQLAlchemy async URL: DatabaseTaskStore there"
    )
    args = parser.parse_args()
    logging.getLogger("a2a").setLevel(logging.ERROR)  # no line per refused tasks/pause
    uvicorn.run(app(args.port, args.database_url), host=args.host, port=args.port,
                log_level="warning", access_log=False)  # fmt: skip


if __name__ == "__main__":
    main()
