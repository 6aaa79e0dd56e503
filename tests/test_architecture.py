"""The rules of the house that imports can show (docs/design/house-rules.md): one core, many doors;
dependencies point inward; doors never import each other. Read from the source (every
import statement, function-level ones included), so a shortcut cannot hide in a function.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

DOORS = {
    "a2a.protocol": "A2A protocol (shared by the A2A bindings and push)",
    "a2a.jsonrpc": "A2A JSON-RPC binding",
    "a2a.rest": "A2A HTTP+JSON binding",
    "a2a.grpc_door": "A2A gRPC binding",
    "a2a.push": "A2A push notifications",
    "a2a.acp_door": "ACP door",
    "agui": "AG-UI projection and door",
    "dashboard": "operator dashboard",
}
# Which door packages each room may import. The core (a2a minus its doors) may import none.
ALLOWED: dict[str, set[str]] = {
    "core": set(),
    "a2a.protocol": set(),
    "a2a.jsonrpc": {"a2a.protocol"},
    "a2a.rest": {"a2a.protocol"},
    "a2a.grpc_door": {"a2a.protocol"},
    "a2a.push": {"a2a.protocol"},  # push posts A2A stream items; it is part of the A2A door
    "a2a.acp_door": set(),
    "agui": set(),
    "dashboard": {"agui"},  # dashboard → agui → a2a
}
# Wiring that names the doors on purpose: URL tables and the Django project's own files.
WIRING = {"a2a/urls.py", "dashboard/urls.py", "dashboard/asgi.py", "dashboard/settings.py"}


def room_of(module: str) -> str:
    for door in DOORS:
        if module == door or module.startswith(door + "."):
            return door
    return "core"


def door_imported(name: str) -> str | None:
    for door in DOORS:
        if name == door or name.startswith(door + "."):
            return door
    return None


def imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [(node.lineno, node.module)]
            found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return found


def modules():
    for top in ("a2a", "agui", "dashboard"):
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT)
            if "migrations" in rel.parts or str(rel) in WIRING:
                continue
            yield rel, ".".join(rel.with_suffix("").parts)


@pytest.mark.parametrize(("rel", "module"), list(modules()), ids=lambda v: str(v))
def test_no_room_imports_a_door_it_must_not(rel, module):
    room = room_of(module)
    wrong = []
    for line, name in imports(ROOT / rel):
        door = door_imported(name)
        if door is None or door == room or door in ALLOWED[room]:
            continue
        wrong.append(f"{rel}:{line} imports {name} ({DOORS[door]})")
    assert not wrong, f"{room} may not import these:\n" + "\n".join(wrong)


def test_no_package_or_app_of_ours_is_named_acp():
    """`acp` is the official SDK's import name: a package or app of ours by that name would
    shadow it."""
    installed = {".venv", ".venv-interop", ".acp-peers", ".git"}
    ours = [p for p in ROOT.rglob("acp") if p.is_dir() and not installed & set(p.parts)]
    assert ours == []
    from django.apps import apps

    assert "acp" not in {a.label for a in apps.get_app_configs()}
    import acp

    assert Path(acp.__file__).parts[-3] == "site-packages"
