"""Querysets compiled once, then run many times with new values.

Why: on the hottest reads (GetTask: a task, its history, its artifacts) building and
compiling the querysets cost more CPU than the database spent running them — a py-spy
profile of GetTask under wrk on PostgreSQL put about 45% of the web process's CPU in the
ORM's filter building, `SQLCompiler.as_sql` and the prefetch machinery, against 6% in
executing. A `Prepared` query is still written with the ORM and still turns rows into
model instances with the ORM's own code (from_db, select_related populators, field
converters); only the compiling is done once per shape and database connection settings.

How: `build` receives a marker for each named parameter and returns a queryset. It is
compiled once per database alias; the positions at which the markers' values show up in
the compiled parameters are remembered, and each `fetch` runs the same SQL with the
caller's values at those positions. A shape in which a marker does not come out verbatim
(a lookup that rewrites its value, such as `__icontains`) or comes out more than once is
refused when it is first compiled, so a prepared query either runs exactly the ORM's SQL
or does not run at all. Values must be of the type the column holds (a str for a
CharField id, an int for a count): the ORM's own conversions are not applied again, with
one exception: a UUID (named in `uuids`) is passed as the database takes it (a UUID on
PostgreSQL, its hex on SQLite), as UUIDField does.

No well-kept library does this (django-prepared-queries, the one that did, is
unmaintained); it is kept small, and tests/a2a/test_prepared.py compares its answers with
the ORM's. The compiler internals it reads: docs/upgrading.md.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import connections
from django.db.models import QuerySet, UUIDField
from django.db.models.query import ModelIterable, get_related_populators
from django.db.models.sql.compiler import SQLCompiler
from django.db.transaction import TransactionManagementError

# Unlikely to occur in any real query: the marker values a prepared query is compiled with.
# The integers are positive and fit a 32-bit column: the ORM refuses to compile a compare
# with a value outside the column's range (EmptyResultSet), as it must for a real value.
_STR_MARKER = "\x00taskdeck-prepared:{}\x00"
_INT_MARKER_BASE = 2_100_000_000
_UUID = UUIDField()  # converts a UUID parameter (or its text) as the database takes it


class PreparedShapeError(ValueError):
    """The queryset's parameters do not come out of the compiler as markers can find."""


@dataclass(frozen=True)
class _Compiled:
    sql: str
    params: tuple[Any, ...]
    positions: tuple[tuple[int, str], ...]
    select: list
    klass_info: dict | None
    annotation_col_map: dict
    col_count: int
    init_list: list[str]
    model_fields: slice
    extra_columns: bool
    for_update: bool


class Prepared:
    """A queryset shape compiled once per database alias (see the module's docstring).

    `ints` names the parameters that are integers, `uuids` those that are UUIDs (the rest
    are strings)."""

    def __init__(
        self,
        build: Callable[..., QuerySet],
        *names: str,
        ints: tuple[str, ...] = (),
        uuids: tuple[str, ...] = (),
    ) -> None:
        self.build = build
        self.names = names
        self.ints = frozenset(ints)
        self.uuids = frozenset(uuids)
        self._compiled: dict[str, _Compiled] = {}

    def _markers(self) -> dict[str, Any]:
        counter = itertools.count(1)
        markers: dict[str, Any] = {}
        for name in self.names:
            if name in self.ints:
                markers[name] = _INT_MARKER_BASE + next(counter)
            elif name in self.uuids:
                markers[name] = uuid.UUID(int=_INT_MARKER_BASE + next(counter))
            else:
                markers[name] = _STR_MARKER.format(name)
        return markers

    def _compile(self, using: str) -> _Compiled:
        markers = self._markers()
        queryset = self.build(**markers).using(using)
        compiler = queryset.query.get_compiler(using=using)
        sql, params = compiler.as_sql()
        connection = connections[using]
        by_value = {
            _UUID.get_db_prep_value(value, connection) if name in self.uuids else value: name
            for name, value in markers.items()
        }
        positions = [(i, by_value[p]) for i, p in enumerate(params) if _is_marker(p, by_value)]
        found = [name for _, name in positions]
        if sorted(found) != sorted(self.names):
            raise PreparedShapeError(
                f"each parameter must appear once, verbatim, in the compiled query; "
                f"found {found} for {list(self.names)}"
            )
        # values()/values_list() querysets give rows, not model instances
        klass_info = compiler.klass_info if queryset._iterable_class is ModelIterable else None
        select_fields = klass_info["select_fields"] if klass_info else [0, compiler.col_count - 1]
        model_fields = slice(select_fields[0], select_fields[-1] + 1)
        return _Compiled(
            sql=sql,
            params=tuple(params),
            positions=tuple(positions),
            select=compiler.select,
            klass_info=klass_info,
            annotation_col_map=compiler.annotation_col_map or {},
            col_count=compiler.col_count,
            init_list=[f[0].target.attname for f in compiler.select[model_fields]]
            if klass_info
            else [],
            model_fields=model_fields,
            extra_columns=compiler.has_extra_select,
            for_update=queryset.query.select_for_update,
        )

    def fetch(self, using: str = "default", **values: Any) -> list[Any]:
        """The model instances the queryset would give for these values (for a values()
        or values_list() queryset: its rows, as tuples of the selected columns)."""
        compiled = self._compiled.get(using)
        if compiled is None:
            compiled = self._compiled[using] = self._compile(using)
        params = list(compiled.params)
        connection = connections[using]
        for position, name in compiled.positions:
            value = values[name]
            if name in self.uuids:  # as the column takes it: native, or hex on SQLite
                value = _UUID.get_db_prep_value(value, connection)
            params[position] = value
        if compiled.for_update and connection.get_autocommit():  # as the ORM refuses it
            raise TransactionManagementError(
                "select_for_update cannot be used outside of a transaction."
            )
        with connection.cursor() as cursor:
            cursor.execute(compiled.sql, params)
            rows = cursor.fetchall()
        if not rows:
            return []
        if compiled.extra_columns:  # selected only to order by: not the model's
            rows = [row[: compiled.col_count] for row in rows]
        # the compiler's own converters (JSON, dates on SQLite...) for this connection
        compiler = SQLCompiler(None, connection, using)
        compiler.select = compiled.select
        compiler.col_count = compiled.col_count
        if compiled.klass_info is None:
            return [tuple(row) for row in compiler.results_iter([rows])]
        model = compiled.klass_info["model"]
        populators = get_related_populators(compiled.klass_info, compiled.select, using)
        found = []
        for row in compiler.results_iter([rows]):
            obj = model.from_db(using, compiled.init_list, row[compiled.model_fields])
            for populator in populators:
                populator.populate(row, obj)
            for attr, position in compiled.annotation_col_map.items():
                setattr(obj, attr, row[position])
            found.append(obj)
        return found

    def first(self, using: str = "default", **values: Any) -> Any:
        """The first instance (or row) `fetch` gives, or None."""
        found = self.fetch(using, **values)
        return found[0] if found else None


def _is_marker(value: Any, by_value: dict[Any, str]) -> bool:
    # psycopg's integer wrappers (Int4...) are ints
    if isinstance(value, uuid.UUID):
        return value in by_value
    return isinstance(value, (str, int)) and not isinstance(value, bool) and value in by_value
