"""The rules of the house that the source can show (docs/architecture.md and
docs/design/house-rules.md): one core, many doors; dependencies point inward; doors never
import each other; one write path.

Read from the source, every module of a2a, agui and dashboard (migrations aside):

- every import statement, function-level ones included, relative ones resolved against
  the module's package, and every `import_module` / `__import__` / `apps.get_model` whose
  argument is a string, so a shortcut cannot hide in a function or a string;
- every write of a guarded model (Task, TaskEvent, Suspension: `a2a.services` only; the
  run lease: the runtime only), found by what the code writes to — the model's name
  however imported, its managers and querysets, an instance the function got from them or
  declared by annotation, a relation that leads to it — not by variable names.

Each rule has checks of the checker below (`test_the_checker_*`): the shortcuts it must
see, and look-alikes it must not take for them.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOPS = ("a2a", "agui", "dashboard")

# The rooms of the house besides the core (a2a minus all of these). A module is in the
# room whose package holds it. `a2a.acp_sdk` (the one adapter for the ACP SDK's
# internals, shared by the ACP door and the ACP host) is core: any room may import it.
ROOMS = {
    "a2a.runtime": "agent runtime",
    "a2a.acp_host": "ACP host",
    "a2a.protocol": "A2A protocol (shared by the A2A bindings and push)",
    "a2a.jsonrpc": "A2A JSON-RPC binding",
    "a2a.rest": "A2A HTTP+JSON binding",
    "a2a.grpc_door": "A2A gRPC binding",
    "a2a.push": "A2A push notifications",
    "a2a.alerts": "operator alerts",
    "a2a.acp_door": "ACP door",
    "agui": "AG-UI projection and door",
    "dashboard": "operator dashboard and the Django project",
}
# Which rooms each room may import (besides its own and the core). The core imports none:
# what it needs from a room reaches it through a registry the room fills (rule 5).
ALLOWED: dict[str, set[str]] = {
    "core": set(),
    "a2a.runtime": set(),  # the core only
    "a2a.acp_host": {"a2a.runtime"},  # runs hosted agents' turns under the runtime's leases
    "a2a.protocol": set(),
    "a2a.jsonrpc": {"a2a.protocol"},
    "a2a.rest": {"a2a.protocol"},
    "a2a.grpc_door": {"a2a.protocol"},
    "a2a.push": {"a2a.protocol"},  # push posts A2A stream items; it is part of the A2A door
    "a2a.alerts": {"a2a.push"},  # an alert webhook goes through push's URL guard and post
    "a2a.acp_door": set(),
    "agui": set(),
    "dashboard": {"agui", "a2a.alerts"},  # dashboard → agui → a2a; /alerts reads the alerts
}
# Wiring that names the rooms on purpose: URL tables and the Django project's own files
# (INSTALLED_APPS, the ASGI routing).
WIRING = {"a2a/urls.py", "dashboard/urls.py", "dashboard/asgi.py", "dashboard/settings.py"}

# Rule 1: the models only one package (or a named few) writes, and who.
WRITERS: dict[str, tuple[str, ...]] = {
    "a2a.Task": ("a2a/services",),
    "a2a.TaskEvent": ("a2a/services",),
    "a2a.Suspension": ("a2a/services",),
    "a2a.TaskCount": ("a2a/services",),  # ListTasks' totalSize, kept by the writers (D27)
    "a2a.TaskCountChange": ("a2a/services",),
    "runtime.RunLease": ("a2a/runtime",),  # the ACP host keeps leases through a2a.runtime.leases
    # the writer records one with each event, the projection deletes those it projected
    # (docs/design/projection-after-commit.md, D8): nobody else touches the queue
    "a2a.ProjectionDue": ("a2a/services", "agui/projection.py"),
}

# Justified exceptions, each named and with why (none today). An import is named
# "<file> -> <room>", e.g. "a2a/acp_door/live.py -> a2a.runtime"; a write
# "<file>::<function> -> <model>", e.g. "agui/bridge.py::start_run -> a2a.Task" ("<module>"
# for a write outside any function). `test_every_exception_is_still_needed` drops stale ones.
EXCEPTIONS: dict[str, str] = {}


@dataclass(frozen=True)
class Finding:
    key: str  # what an exception names
    text: str  # where and what, for the failure message


# -- where a module lives ----------------------------------------------------------------


def room_of(module: str) -> str:
    return next((r for r in ROOMS if module == r or module.startswith(r + ".")), "core")


def room_named(name: str) -> str | None:
    """The room an imported name belongs to (None: the core or not ours)."""
    return next((r for r in ROOMS if name == r or name.startswith(r + ".")), None)


def rooms_a_prefix_may_name(prefix: str) -> set[str]:
    """The rooms an import built at run time from `prefix` (an f-string's constant start)
    may reach: all rooms that start so, or the room the prefix is already inside."""
    inside = room_named(prefix.rstrip("."))
    if inside is not None:
        return {inside}
    return {r for r in ROOMS if r.startswith(prefix)}


@dataclass(frozen=True)
class Source:
    rel: str  # path from the repository's root, e.g. "a2a/rest/views.py"
    text: str

    @property
    def module(self) -> str:
        parts = Path(self.rel).with_suffix("").parts
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    @property
    def package(self) -> str:
        """What a relative import is relative to."""
        is_package = Path(self.rel).name == "__init__.py"
        return self.module if is_package else self.module.rpartition(".")[0]

    @cached_property
    def tree(self) -> ast.Module:
        return ast.parse(self.text, filename=self.rel)


def sources() -> Iterator[Source]:
    for top in TOPS:
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT)
            if "migrations" in rel.parts:
                continue
            yield Source(str(rel), path.read_text())


def resolve(package: str, level: int, module: str | None) -> str:
    """`from <level dots><module> import …` inside `package`, as an absolute name."""
    if level == 0:
        return module or ""
    parts = package.split(".")
    base = parts[: len(parts) - (level - 1)] if level - 1 < len(parts) else []
    return ".".join([*base, module] if module else base)


# -- imports, static and dynamic ----------------------------------------------------------

DYNAMIC_IMPORTS = {"import_module", "__import__"}


@dataclass(frozen=True)
class Imported:
    line: int
    name: str  # an absolute module (or module.attribute) name, or an f-string's prefix
    prefix: bool = False  # built at run time: only its start is known


def _string_start(node: ast.expr) -> tuple[str, bool] | None:
    """A constant string, or the constant start of an f-string (prefix=True)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value, False
    if isinstance(node, ast.JoinedStr):
        head = node.values[0] if node.values else None
        if isinstance(head, ast.Constant) and isinstance(head.value, str):
            return head.value, True
    return None


def _callee(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _dynamic(node: ast.Call, source: Source) -> Iterator[Imported]:
    name = _callee(node)
    if name in DYNAMIC_IMPORTS and node.args:
        got = _string_start(node.args[0])
        if got is None:
            return  # a name from settings (the runtime's agents): not the code's choice
        text, prefix = got
        if text.startswith("."):  # import_module(".x", package)
            package = node.args[1] if len(node.args) > 1 else None
            package = next((k.value for k in node.keywords if k.arg == "package"), package)
            if isinstance(package, ast.Name) and package.id == "__package__":
                base = source.package
            elif isinstance(package, ast.Constant) and isinstance(package.value, str):
                base = package.value
            else:
                return
            level = len(text) - len(text.lstrip("."))
            text = resolve(base, level, text.lstrip(".") or None)
        yield Imported(node.lineno, text, prefix)
    elif name == "get_model" and node.args:  # apps.get_model("runtime", "RunLease")
        got = _string_start(node.args[0])
        if got is not None and not got[1]:
            app = _app_module(got[0].split(".")[0])
            if app is not None:
                yield Imported(node.lineno, app)


@cache
def _app_module(label: str) -> str | None:
    from django.apps import apps

    try:
        return apps.get_app_config(label).name
    except LookupError:
        return None


def imports(source: Source) -> list[Imported]:
    found = []
    for node in ast.walk(source.tree):
        if isinstance(node, ast.Import):
            found += [Imported(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = resolve(source.package, node.level, node.module)
            found.append(Imported(node.lineno, base))
            found += [Imported(node.lineno, f"{base}.{a.name}") for a in node.names]
        elif isinstance(node, ast.Call):
            found += list(_dynamic(node, source))
    return found


@cache  # each module is read once for its test and once for the exceptions' test
def import_findings(source: Source) -> list[Finding]:
    if source.rel in WIRING:
        return []
    room = room_of(source.module)
    wrong: dict[tuple[int, str], str] = {}  # per statement and room, the longest name
    for got in imports(source):
        reached = rooms_a_prefix_may_name(got.name) if got.prefix else {room_named(got.name)}
        for other in sorted(r for r in reached if r is not None):
            if other == room or other in ALLOWED[room]:
                continue
            how = f"a run-time import of {got.name!r}…" if got.prefix else got.name
            if len(how) > len(wrong.get((got.line, other), "")):
                wrong[got.line, other] = how
    return [
        Finding(f"{source.rel} -> {other}", f"{source.rel}:{line} imports {how} ({ROOMS[other]})")
        for (line, other), how in sorted(wrong.items())
    ]


def wrong_imports(source: Source) -> list[str]:
    return [f.text for f in import_findings(source) if f.key not in EXCEPTIONS]


# -- rule 1: writes of guarded models -----------------------------------------------------

# Calls that write the rows they are called on: a manager's, a queryset's, an instance's,
# a related manager's.
WRITES = {
    "save", "delete", "create", "update", "bulk_create", "bulk_update", "update_or_create",
    "get_or_create", "add", "_insert", "_update", "_do_update", "save_base",
}  # fmt: skip
# Manager and queryset calls whose result still holds rows of the same model.
SAME_MODEL = {
    "all", "filter", "exclude", "select_for_update", "select_related", "prefetch_related",
    "order_by", "reverse", "distinct", "using", "only", "defer", "annotate", "alias",
    "none", "get", "first", "last", "latest", "earliest", "in_bulk", "iterator", "create",
    "get_or_create", "update_or_create", "union", "intersection", "difference",
    "get_queryset", "aget", "afirst", "alast", "acreate", "aget_or_create",
}  # fmt: skip
MANAGERS = {"objects", "_default_manager", "_base_manager"}
# a2a.prepared's writes: `PreparedInsert(Task)` writes Task rows wherever it is built.
PREPARED_WRITES = {"PreparedInsert", "PreparedUpdate"}
ASYNC_WRITES = {f"a{w}" for w in WRITES if not w.startswith("_")}


@dataclass(frozen=True)
class Schema:
    """From the installed models: where each guarded model lives, each relation's model
    (field names and reverse accessors of every model: the nearest relation in a chain
    decides what it leads to) and the guarded tables (for raw SQL)."""

    classes: dict[str, str]  # "a2a.models.Task" → "a2a.Task"
    relations: dict[str, set[str]]  # "current_suspension" → {"a2a.Suspension"}
    tables: dict[str, str]  # "a2a_task" → "a2a.Task"


@cache
def schema() -> Schema:
    from django.apps import apps

    classes, relations, tables = {}, {}, {}
    for model in apps.get_models():
        label = model._meta.label
        if label in WRITERS:
            classes[f"{model.__module__}.{model.__name__}"] = label
            tables[model._meta.db_table] = label
        for f in model._meta.get_fields():
            if not f.is_relation or f.related_model is None:
                continue
            if f.concrete or f.many_to_many:
                relations.setdefault(f.name, set()).add(f.related_model._meta.label)
            elif (accessor := f.get_accessor_name()) and not accessor.endswith("+"):
                relations.setdefault(accessor, set()).add(f.related_model._meta.label)
    return Schema(classes, relations, tables)


@dataclass
class Scope:
    """What a function (or the module) knows: names bound to guarded models (or to a
    module holding them), and names bound to their rows."""

    names: dict[str, str]  # local name → qualified name (imports, the module's functions)
    rows: dict[str, set[str]] = field(default_factory=dict)  # variable → model labels
    returns: dict[str, set[str]] = field(default_factory=dict)  # function → model labels


def _qualified(node: ast.expr, scope: Scope) -> str | None:
    if isinstance(node, ast.Name):
        return scope.names.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _qualified(node.value, scope)
        return f"{base}.{node.attr}" if base else None
    return None


def _model_class(node: ast.expr, scope: Scope) -> str | None:
    name = _qualified(node, scope)
    return schema().classes.get(name) if name else None


def models_of(node: ast.expr, scope: Scope) -> set[str]:
    """The guarded models whose rows (or manager, queryset, class) `node` holds."""
    if (label := _model_class(node, scope)) is not None:
        return {label}
    if isinstance(node, ast.Name):
        return scope.rows.get(node.id, set())
    if isinstance(node, ast.Attribute):
        if node.attr in MANAGERS:
            return models_of(node.value, scope)
        return schema().relations.get(node.attr, set()) & set(WRITERS)
    if isinstance(node, ast.Subscript | ast.Await | ast.Starred):
        return models_of(node.value, scope)
    if isinstance(node, ast.BoolOp):  # `cached or M.objects.get(…)`
        return set().union(*(models_of(v, scope) for v in node.values))
    if isinstance(node, ast.IfExp):
        return models_of(node.body, scope) | models_of(node.orelse, scope)
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in SAME_MODEL:
            return models_of(func.value, scope)
        if isinstance(func, ast.Attribute) and func.attr == "get_model" and node.args:
            parts = [a.value for a in node.args if isinstance(a, ast.Constant)]
            label = ".".join(str(p) for p in parts)
            return {label} & set(WRITERS)
        if (label := _model_class(func, scope)) is not None:
            return {label}
        name = _qualified(func, scope)
        return scope.returns.get(name, set()) if name else set()  # `-> Task` functions
    return set()


def _annotated(annotation: ast.expr | None, scope: Scope) -> set[str]:
    """The guarded models an annotation names (`Task`, `Task | None`, "Task", list[Task])."""
    if annotation is None:
        return set()
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return set()
    found = set()
    for node in ast.walk(annotation):
        if isinstance(node, ast.Name | ast.Attribute):
            if (label := _model_class(node, scope)) is not None:
                found.add(label)
            elif isinstance(node, ast.Name) and node.id in schema_names():
                found.add(schema_names()[node.id])  # a string annotation under TYPE_CHECKING
    return found


def schema_names() -> dict[str, str]:
    return {q.rpartition(".")[2]: label for q, label in schema().classes.items()}


def _bind(target: ast.expr, labels: set[str], scope: Scope, value: ast.expr | None) -> None:
    if isinstance(target, ast.Name) and labels:
        scope.rows.setdefault(target.id, set()).update(labels)
    elif isinstance(target, ast.Tuple | ast.List) and target.elts:
        # `row, created = M.objects.get_or_create(…)`: the row is the first
        creating = (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr in ("get_or_create", "update_or_create")
        )
        if creating:
            _bind(target.elts[0], labels, scope, None)


def _imports_of(tree: ast.AST, source: Source) -> dict[str, str]:
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    names[a.asname] = a.name
                else:
                    names[a.name.split(".")[0]] = a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = resolve(source.package, node.level, node.module)
            for a in node.names:
                names[a.asname or a.name] = f"{base}.{a.name}"
    return names


def _learn(body: ast.AST, scope: Scope) -> None:
    """Bind the names of a scope that hold guarded rows: twice, so `b = a` after `a = …`
    is learnt whatever the order of the statements."""
    for _ in range(2):
        for node in _own_nodes(body):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    _bind(target, models_of(node.value, scope), scope, node.value)
            elif isinstance(node, ast.AnnAssign):
                labels = _annotated(node.annotation, scope)
                if node.value is not None:
                    labels |= models_of(node.value, scope)
                _bind(node.target, labels, scope, node.value)
            elif isinstance(node, ast.NamedExpr):
                _bind(node.target, models_of(node.value, scope), scope, node.value)
            elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
                _bind(node.target, models_of(node.iter, scope), scope, None)
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                _bind(node.optional_vars, models_of(node.context_expr, scope), scope, None)


FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def _own_nodes(body: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a scope, not those of the functions defined in it."""
    stack = list(ast.iter_child_nodes(body))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, FUNCTIONS):
            stack.extend(ast.iter_child_nodes(node))


def _writes_in(
    body: ast.AST, scope: Scope, where: str = "<module>"
) -> Iterator[tuple[int, str, str, set[str]]]:
    """(line, enclosing function, write, models) of each write of guarded rows."""
    for node in _own_nodes(body):
        if isinstance(node, FUNCTIONS):
            inner = Scope(scope.names, {k: set(v) for k, v in scope.rows.items()}, scope.returns)
            args = node.args
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
                inner.rows.pop(arg.arg, None)  # a parameter hides an outer name
                _bind(ast.Name(arg.arg), _annotated(arg.annotation, scope), inner, None)
            _learn(node, inner)
            name = node.name if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) else where
            yield from _writes_in(node, inner, name)
        elif isinstance(node, ast.Call) and _prepared_write(node.func) and node.args:
            if labels := models_of(node.args[0], scope):
                yield node.lineno, where, _prepared_write(node.func), labels
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method = node.func.attr
            if method in WRITES or method in ASYNC_WRITES:
                labels = models_of(node.func.value, scope)
                if labels:
                    yield node.lineno, where, method, labels
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            for table, label in schema().tables.items():
                sql = rf"\b(insert\s+into|update|delete\s+from)\s+[\"`']?{table}[\"`']?(\s|$)"
                if re.search(sql, node.value, re.IGNORECASE):
                    yield node.lineno, where, "SQL", {label}


def _prepared_write(func: ast.expr) -> str | None:
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    return name if name in PREPARED_WRITES else None


def _module_scope(source: Source, tree: ast.Module) -> Scope:
    names = _imports_of(tree, source)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names[node.name] = f"{source.module}.{node.name}"
    return Scope(names)


def _returns_of(source: Source, tree: ast.Module, scope: Scope) -> dict[str, set[str]]:
    """The module's functions declared to return guarded rows (`-> Task | None`)."""
    found = {}
    for node in tree.body:
        is_function = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        if is_function and (labels := _annotated(node.returns, scope)):
            found[f"{source.module}.{node.name}"] = labels
    return found


@cache
def returns() -> dict[str, set[str]]:
    """Every product function declared to return guarded rows, by qualified name: a row
    a function got from `services.create_task(…)` or `current_suspension(task)` is one."""
    found, scopes = {}, []
    for source in SOURCES:
        tree = source.tree
        scope = _module_scope(source, tree)
        found.update(_returns_of(source, tree, scope))
        scopes.append((source.module, scope))
    for _ in range(2):  # re-exports (`a2a.services` re-exports its modules' functions)
        for module, scope in scopes:
            for local, target in scope.names.items():
                if target in found:
                    found.setdefault(f"{module}.{local}", found[target])
    return found


@cache
def write_findings(source: Source) -> list[Finding]:
    tree = source.tree
    scope = _module_scope(source, tree)
    scope.returns = {**returns(), **_returns_of(source, tree, scope)}
    _learn(tree, scope)
    found = []
    for line, where, method, labels in _writes_in(tree, scope):
        for label in sorted(labels):
            writers = WRITERS[label]
            if any(source.rel == w or source.rel.startswith(w + "/") for w in writers):
                continue
            only = " and ".join(writers)
            text = f"{source.rel}:{line} ({where}) writes {label} ({method}); only {only} may"
            found.append(Finding(f"{source.rel}::{where} -> {label}", text))
    return found


def wrong_writes(source: Source) -> list[str]:
    return [f.text for f in write_findings(source) if f.key not in EXCEPTIONS]


# -- the rules, on every module -----------------------------------------------------------

SOURCES = list(sources())


@pytest.mark.parametrize("source", SOURCES, ids=lambda s: s.rel)
def test_no_room_imports_a_room_it_must_not(source):
    wrong = wrong_imports(source)
    assert not wrong, f"{room_of(source.module)} may not import these:\n" + "\n".join(wrong)


@pytest.mark.parametrize("source", SOURCES, ids=lambda s: s.rel)
def test_only_the_write_path_writes_tasks_events_and_suspensions(source):
    """Rule 1: tasks, their events and suspensions change in `a2a.services` only (and the
    run lease in the runtime only; the projection queue in the services and the projection)."""
    wrong = wrong_writes(source)
    assert not wrong, "\n".join(wrong)


def test_every_exception_is_still_needed():
    found = {f.key for s in SOURCES for f in [*import_findings(s), *write_findings(s)]}
    assert set(EXCEPTIONS) <= found, f"exceptions nothing needs any more: {set(EXCEPTIONS) - found}"


def test_the_rooms_are_the_packages_there_are():
    """A renamed or new package cannot fall silently into the core: every room exists,
    and every package of a2a is the core's, a room, or inside one."""
    for room in ROOMS:
        assert (ROOT / Path(*room.split("."))).is_dir(), f"room {room} has no package"
    packages = {
        f"a2a.{p.name}"
        for p in (ROOT / "a2a").iterdir()
        if p.is_dir() and p.name != "migrations" and any(p.glob("*.py"))
    }
    core = {"a2a.services", "a2a.management"}  # the write path; create_api_key
    assert packages - core <= set(ROOMS), "a new package of a2a: a room, or the core's?"


# -- the checker sees what it must --------------------------------------------------------


@pytest.mark.parametrize(
    ("rel", "code", "expected"),
    [
        # the probe imports of issue 27
        ("a2a/rest/views.py", "from ..jsonrpc import sse", "a2a.jsonrpc"),
        ("a2a/rest/views.py", "from .. import jsonrpc", "a2a.jsonrpc"),
        ("a2a/events.py", "from a2a.runtime import inline", "a2a.runtime"),
        ("a2a/events.py", "from .runtime.inline import wanted", "a2a.runtime"),
        ("agui/projector.py", "from a2a.acp_host import config", "a2a.acp_host"),
        # the other ways in
        ("a2a/events.py", "import a2a.runtime.settle as s", "a2a.runtime"),
        ("a2a/events.py", "def f():\n    from a2a import acp_host", "a2a.acp_host"),
        ("a2a/jsonrpc/views.py", "from a2a.runtime.settle import settled", "a2a.runtime"),
        ("a2a/runtime/executor.py", "from a2a.acp_host import hooks", "a2a.acp_host"),
        ("a2a/runtime/executor.py", "from agui import projector", "agui"),
        ("a2a/acp_host/hooks.py", "from a2a.acp_door import sessions", "a2a.acp_door"),
        ("dashboard/pages/demo.py", "from a2a.acp_host.config import HOSTED_TAG", "a2a.acp_host"),
        ("agui/apps.py", "from a2a.runtime.scheduler import PERIODIC", "a2a.runtime"),
        ("agui/x.py", "import_module('a2a.acp_host.config')", "a2a.acp_host"),
        ("agui/x.py", "importlib.import_module('a2a.runtime')", "a2a.runtime"),
        ("agui/x.py", "__import__('a2a.runtime.inline')", "a2a.runtime"),
        ("a2a/rest/x.py", "import_module('..jsonrpc.sse', __package__)", "a2a.jsonrpc"),
        ("a2a/rest/x.py", "import_module('.sse', package='a2a.jsonrpc')", "a2a.jsonrpc"),
        ("a2a/models.py", "import_module(f'a2a.runtime.agents.{name}')", "a2a.runtime"),
        ("a2a/models.py", "import_module(f'a2a.{room}')", "a2a.runtime"),
        ("a2a/events.py", "apps.get_model('runtime', 'RunLease')", "a2a.runtime"),
        ("a2a/events.py", "apps.get_model('acp_host.HostedSession')", "a2a.acp_host"),
    ],
)
def test_the_checker_refuses(rel, code, expected):
    wrong = wrong_imports(Source(rel, code))
    assert any(f"({ROOMS[expected]})" in w for w in wrong), wrong


@pytest.mark.parametrize(
    ("rel", "code"),
    [
        ("a2a/rest/views.py", "from ..protocol import calls"),
        ("a2a/rest/views.py", "from . import routes"),
        ("a2a/acp_host/hooks.py", "from a2a.runtime import leases"),
        ("a2a/acp_door/live.py", "from a2a.acp_sdk import connection_of"),  # core
        ("dashboard/pages/demo.py", "from agui import selectors"),
        ("a2a/runtime/registry.py", "import_module(path)"),  # a name from settings
        ("a2a/work.py", "from a2a.runtimes import x"),  # not a room: a prefix is no match
        ("dashboard/settings.py", "INSTALLED_APPS = ['a2a.runtime']"),  # wiring
    ],
)
def test_the_checker_allows(rel, code):
    assert wrong_imports(Source(rel, code)) == []


@pytest.mark.parametrize(
    "code",
    [
        "from a2a.models import Task\nTask.objects.filter(pk=1).update(state='x')",
        "from a2a.models import Task as T\nT.objects.create(id='t')",
        "from a2a import models\nmodels.TaskEvent.objects.bulk_create([])",
        "import a2a.models\na2a.models.Suspension.objects.all().delete()",
        "from ..models import Task\nTask.objects.select_for_update().get(pk=1).save()",
        "from a2a.models import Task\ndef f(task: Task):\n    task.save()",
        "from a2a.models import Task\ndef f(task: 'Task | None'):\n    task.delete()",
        "from a2a.models import Task\ndef f():\n    t = Task.objects.get(pk=1)\n    t.save()",
        "from a2a.models import Task\ndef f():\n    t, _ = Task.objects.get_or_create(id=1)\n"
        "    t.save()",
        "from a2a.models import Task\nfor t in Task.objects.filter(state='x'):\n    t.save()",
        "from a2a.services._core import current_suspension\ndef f(task):\n"
        "    susp = current_suspension(task)\n    susp.save()",
        "from a2a import services\ndef f():\n    services.create_task(skill='x').delete()",
        "from a2a.models import Task\ndef get() -> Task:\n    ...\nget().save()",
        "from a2a.models import Task\ndef f(cached):\n"
        "    t = cached or Task.objects.get(pk=1)\n    t.save()",
        "def f(event):\n    event.task.save(update_fields=['state'])",
        "def f(task):\n    task.current_suspension.save()",
        "def f(task):\n    task.events.create(kind='x')",
        "def f(task):\n    task.suspensions.filter(ended_at=None).update(ending='x')",
        "from django.apps import apps\napps.get_model('a2a', 'Task').objects.update(state='x')",
        "async def f(task_id):\n    from a2a.models import Task\n"
        "    await Task.objects.filter(pk=task_id).aupdate(state='x')",
        "def f(cursor):\n    cursor.execute('UPDATE a2a_task SET state = %s', ['x'])",
        "from a2a.runtime.models import RunLease\nRunLease.objects.filter(task_id=1).delete()",
        "from a2a.models import TaskEvent\nfrom a2a.prepared import PreparedInsert\n"
        "EVENT = PreparedInsert(TaskEvent)",
        "from a2a import models, prepared\nSAVE = prepared.PreparedUpdate(models.Task)",
    ],
)
def test_the_checker_sees_a_write(code):
    assert wrong_writes(Source("a2a/protocol/x.py", code)), code


@pytest.mark.parametrize(
    "code",
    [
        "from a2a.models import Message\nMessage.objects.create(task_id=1)",
        "from a2a.models import Message\nfrom a2a.prepared import PreparedInsert\n"
        "NEW = PreparedInsert(Message)",
        "def f(task):\n    task.messages.create(role='user')",
        "from a2a.models import Task\nrow = Task.objects.values('id').first()\nrow.update(x=1)",
        "def f(thread):\n    thread.save(update_fields=['task'])",
        "def f(task: dict):\n    task.update(state='x')",
        "def f(seen):\n    seen.add(1)",
        "from a2a.models import Task\nTask.objects.filter(pk=1).exists()",
        "class M(Model):\n    def save(self, *a, **k):\n        super().save(*a, **k)",
    ],
)
def test_the_checker_leaves_other_writes_alone(code):
    assert wrong_writes(Source("a2a/protocol/x.py", code)) == []


def test_the_write_path_and_the_runtime_write_what_they_own():
    task = "from a2a.models import Task\nTask.objects.filter(pk=1).update(state='x')"
    lease = "from a2a.runtime.models import RunLease\nRunLease.objects.create(task_id=1)"
    assert wrong_writes(Source("a2a/services/x.py", task)) == []
    assert wrong_writes(Source("a2a/runtime/x.py", lease)) == []
    assert wrong_writes(Source("a2a/acp_host/x.py", lease))
    due = "from a2a.models import ProjectionDue\nProjectionDue.objects.filter(task_id=1).delete()"
    assert wrong_writes(Source("agui/projection.py", due)) == []
    assert wrong_writes(Source("a2a/services/x.py", due)) == []
    assert wrong_writes(Source("agui/projector.py", due))
    assert wrong_writes(Source("agui/bridge.py", due))


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
