"""The ACP door: Taskdeck as an Agent Client Protocol agent (`python manage.py acp`).

Editors (Zed, JetBrains, Neovim) launch it over stdio. A session is a Taskdeck context; a
prompt is a user message to the session's task (a new task of the session's mode = skill,
an answer to its open input request, or a message to its conversation); the task's
TaskEvent log becomes `session/update` notifications. The seed's `session/suspend`,
`session/await_resumption`, the enriched `session/resume` and the `suspended` / `resumed`
updates map onto the same pause records as A2A's `tasks/pause` (docs/acp.md).

Never named `acp`: that is the official SDK's import name. Like every door it translates
and nothing else: changes go through `a2a.services`, it imports no other door.
"""
