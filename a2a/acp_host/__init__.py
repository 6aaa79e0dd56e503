"""Taskdeck as an ACP *client*: third-party ACP agents (configured as editors configure
them: command, args, env) become skills, each task of theirs an ACP session held by a
supervisor process (`manage.py run_acp_host`). See docs/acp-hosting.md.

Never a top-level `acp` package or app label: that is the official SDK's import name.
"""
