"""The ACP client role Taskdeck plays for a hosted agent (the SDK's `Client` protocol).

Honest capabilities: Taskdeck declared no file system and no terminal
(agent_process.CLIENT_CAPABILITIES), so those requests are refused with -32601 and a
message that says why, and the refusal is on the task's timeline. Updates and permission
requests have routes of their own (session.HostedRun.on_update,
permission_requests.PermissionRequests.on_request).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acp import RequestError

if TYPE_CHECKING:
    from a2a.acp_host.session import HostedRun


class HostClient:
    def __init__(self, run: HostedRun) -> None:
        self.run = run

    async def _refuse(self, what: str) -> None:
        detail = (
            f"Taskdeck gives hosted agents no {what} (its client capabilities say so); "
            "configure the agent to work without it"
        )
        await self.run.note("refused", f"the agent asked for {what}: refused")
        raise RequestError(-32601, detail)

    async def read_text_file(self, *args: Any, **kwargs: Any) -> Any:
        await self._refuse("file system access (fs/read_text_file)")

    async def write_text_file(self, *args: Any, **kwargs: Any) -> Any:
        await self._refuse("file system access (fs/write_text_file)")

    async def create_terminal(self, *args: Any, **kwargs: Any) -> Any:
        await self._refuse("terminal (terminal/create)")

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None
