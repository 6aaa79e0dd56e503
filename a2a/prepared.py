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

import dataclasses
import itertools
import json
import uuid
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import DatabaseError, connections, transaction
from django.db.models import (
    DateField,
    DateTimeField,
    Field,
    Model,
    Q,
    QuerySet,
    UUIDField,
    signals,
)
from django.db.models.query import ModelIterable, get_related_populators
from django.db.models.sql.compiler import SQLCompiler
from django.db.models.sql.subqueries import InsertQuery, UpdateQuery
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
    # select_related's populators (no state of their own between rows): made once
    populators: list = dataclasses.field(default_factory=list)
    # the compiler's converters, per connection (they are bound to its `ops`): found once
    # per connection instead of asking every column at every fetch, the most CPU a fetch
    # spent after the database itself (yappi, a streaming send)
    converters: weakref.WeakKeyDictionary = dataclasses.field(
        default_factory=weakref.WeakKeyDictionary, compare=False, repr=False
    )


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
            populators=get_related_populators(klass_info, compiler.select, using)
            if klass_info
            else [],
        )

    def compiled(self, using: str = "default") -> _Compiled:
        compiled = self._compiled.get(using)
        if compiled is None:
            compiled = self._compiled[using] = self._compile(using)
        return compiled

    def params(self, compiled: _Compiled, connection: Any, values: dict[str, Any]) -> list[Any]:
        """The compiled parameters with the caller's values at the markers' positions."""
        params = list(compiled.params)
        for position, name in compiled.positions:
            value = values[name]
            if name in self.uuids:  # as the column takes it: native, or hex on SQLite
                value = _UUID.get_db_prep_value(value, connection)
            params[position] = value
        return params

    def fetch(self, using: str = "default", **values: Any) -> list[Any]:
        """The model instances the queryset would give for these values (for a values()
        or values_list() queryset: its rows, as tuples of the selected columns)."""
        compiled = self.compiled(using)
        connection = connections[using]
        params = self.params(compiled, connection, values)
        if compiled.for_update and connection.get_autocommit():  # as the ORM refuses it
            raise TransactionManagementError(
                "select_for_update cannot be used outside of a transaction."
            )
        with connection.cursor() as cursor:
            cursor.execute(compiled.sql, params)
            rows = cursor.fetchall()
        if compiled.extra_columns:  # selected only to order by: not the model's
            rows = [row[: compiled.col_count] for row in rows]
        return _results(compiled, rows, connection, using)

    def first(self, using: str = "default", **values: Any) -> Any:
        """The first instance (or row) `fetch` gives, or None."""
        found = self.fetch(using, **values)
        return found[0] if found else None


class PreparedTogether:
    """Several `Prepared` shapes run as one statement: one round trip to the database
    instead of one each (GetTask: the task, its history and its artifacts). Each part's
    own compiled SQL is a branch of a UNION ALL, its columns in a place of their own (the
    other branches fill it with NULLs of the column's type) behind a first column that
    says which part a row is of; `fetch` gives each part's answer as its own `fetch`
    would, converted by its own compiler's converters. One statement also reads one
    snapshot: the parts agree with each other, as three statements in a row need not.

    The rows of a part come in no promised order (a UNION ALL keeps none): sort what the
    order matters for. Parts with a row lock or with columns selected only to order by
    are refused, as is a column whose database type is unknown."""

    def __init__(self, *parts: Prepared) -> None:
        self.parts = parts
        self.names = tuple(dict.fromkeys(n for part in parts for n in part.names))
        self._compiled: dict[str, tuple[str, list[tuple[int, int]]]] = {}

    def _compile(self, using: str) -> tuple[str, list[tuple[int, int]]]:
        connection = connections[using]
        compiled = [part.compiled(using) for part in self.parts]
        types: list[list[str]] = []
        for part, c in zip(self.parts, compiled, strict=True):
            if c.for_update or c.extra_columns:
                raise PreparedShapeError(f"{part.build} cannot be read together with others")
            column_types = [s[0].output_field.db_type(connection) for s in c.select[: c.col_count]]
            if None in column_types:
                raise PreparedShapeError(f"{part.build} selects a column of no known type")
            types.append(column_types)
        # The first branch's NULLs carry their column's type, so that the UNION ALL's
        # column types are known from its first two branches on (PostgreSQL resolves
        # them a pair of branches at a time: two untyped NULLs would make a text column);
        # the other branches' are bare, which keeps the statement short enough for
        # psycopg to cache its parse (MAX_CACHED_STATEMENT_LENGTH, 4096 characters).
        typed = "NULL::{}" if connection.vendor == "postgresql" else "CAST(NULL AS {})"
        branches, spans, at = [], [], 1
        for i, c in enumerate(compiled):
            pads = [
                ", ".join(typed.format(t) if i == 0 else "NULL" for t in types[j])
                for j in range(len(compiled))
            ]
            columns = [*pads[:i], "p.*", *pads[i + 1 :]]
            branches.append(f"SELECT {i}, {', '.join(columns)} FROM ({c.sql}) p")
            spans.append((at, at + c.col_count))
            at += c.col_count
        return " UNION ALL ".join(branches), spans

    def fetch(self, using: str = "default", **values: Any) -> list[list[Any]]:
        """Each part's answer (a list, as its `fetch` gives it), in the parts' order."""
        found = self._compiled.get(using)
        if found is None:
            found = self._compiled[using] = self._compile(using)
        sql, spans = found
        connection = connections[using]
        params: list[Any] = []
        for part in self.parts:
            params += part.params(part.compiled(using), connection, values)
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            rows = cursor.fetchall()
        by_part: list[list[Any]] = [[] for _ in self.parts]
        for row in rows:
            by_part[row[0]].append(row)
        return [
            _results(part.compiled(using), [r[start:end] for r in part_rows], connection, using)
            for part, part_rows, (start, end) in zip(self.parts, by_part, spans, strict=True)
        ]


def _results(compiled: _Compiled, rows: list, connection: Any, using: str) -> list[Any]:
    """Rows of `compiled` as the ORM gives them: converted by the compiler's own
    converters (JSON, dates on SQLite...) as SQLCompiler.results_iter applies them, then
    model instances (with their select_related objects and annotations), or tuples for a
    values_list() shape."""
    if not rows:
        return []
    compiler = SQLCompiler(None, connection, using)
    converters = compiled.converters.get(connection)
    if converters is None:
        fields = [s[0] for s in compiled.select[: compiled.col_count]]
        converters = compiled.converters[connection] = compiler.get_converters(fields)
    if converters:
        rows = compiler.apply_converters(rows, converters)
    if compiled.klass_info is None:
        return [tuple(row) for row in rows]
    model = compiled.klass_info["model"]
    populators = compiled.populators
    found = []
    for row in rows:
        obj = model.from_db(using, compiled.init_list, row[compiled.model_fields])
        for populator in populators:
            populator.populate(row, obj)
        for attr, position in compiled.annotation_col_map.items():
            setattr(obj, attr, row[position])
        found.append(obj)
    return found


def _is_marker(value: Any, by_value: dict[Any, str]) -> bool:
    # psycopg's integer wrappers (Int4...) are ints
    if isinstance(value, uuid.UUID):
        return value in by_value
    return isinstance(value, (str, int)) and not isinstance(value, bool) and value in by_value


# -- writes ------------------------------------------------------------------------------
#
# Why: every call writes a handful of rows (a TaskEvent, the task's new version, a message,
# the lease), and the ORM builds and compiles each statement anew: a Query, a compiler,
# the field list and its quoting, for SQL that is the same every time. A prepared write
# compiles its statement once per database alias with the ORM's own compiler and then
# only converts the new values, each with its field's own `get_db_prep_save` (what the
# compiler calls), so JSON, UUIDs and datetimes reach the database as the ORM sends them.
# What the ORM would do around the statement and a prepared write would not (model
# signals, `pre_save` work such as auto_now, DB-side defaults, placeholders of its own) is
# refused when the shape is first compiled: a prepared write either sends exactly the
# ORM's statement or does not run. tests/a2a/test_prepared_writes.py compares the rows.


def _plain(field: Field) -> bool:
    """A field whose value the compiler sends as one `%s` parameter, unchanged by
    pre_save: the only kind a prepared write handles."""
    return (
        not getattr(field, "auto_now", False)
        and not getattr(field, "auto_now_add", False)
        and not field.generated
        and not hasattr(field, "get_placeholder")
        and type(field).pre_save in _PLAIN_PRE_SAVE
    )


_PLAIN_PRE_SAVE = {Field.pre_save, DateField.pre_save, DateTimeField.pre_save}


def _refuse_signals(model: type[Model]) -> None:
    if signals.pre_save.has_listeners(model) or signals.post_save.has_listeners(model):
        raise PreparedShapeError(f"{model.__name__} has save signals a prepared write would skip")


def one_of(column: str, values: list[Any], using: str = "default") -> tuple[str, list[Any]]:
    """`column IN (values)` with its one parameter: the same statement text whatever the
    count (each database keeps one prepared statement for it), as agui.fanout's reader
    does. PostgreSQL `= ANY(%s)` with an array, SQLite the values as a JSON array read
    by json_each. For raw statements on hot paths; the ORM's `__in` compiles a
    placeholder per value each time."""
    if connections[using].vendor == "postgresql":
        return f"{column} = ANY(%s)", [list(values)]
    return f"{column} IN (SELECT value FROM json_each(%s))", [json.dumps(list(values))]


def pairs_in(
    columns: tuple[str, str],
    pairs: list[tuple[Any, Any]],
    types: tuple[str, str],
    using: str = "default",
) -> tuple[str, list[Any]]:
    """`(a, b) IN (pairs)` with its parameters, for a raw read of the rows of many keys of
    two columns (a pass's messages by (task, seq)), the same text for any count:
    PostgreSQL one array per column (`types`: their SQL types), SQLite one JSON array of
    pairs read by json_each (as `one_of`). The
    ORM's OR of one Q per pair made statements so long that psycopg parsed each anew
    (its cache stops at 4,096 characters): a projection pass over 64 tasks spent more
    CPU there than in the database."""
    a, b = columns
    if connections[using].vendor == "postgresql":
        firsts, seconds = [p[0] for p in pairs], [p[1] for p in pairs]
        sql = f"({a}, {b}) IN (SELECT * FROM unnest(%s::{types[0]}[], %s::{types[1]}[]))"
        return sql, [firsts, seconds]
    each = "SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(%s)"
    return f"({a}, {b}) IN ({each})", [json.dumps([list(p) for p in pairs])]


class PreparedInsert:
    """`model.objects.create(**values)` with the INSERT compiled once per database alias.

    Every concrete field is written, as the ORM writes them: a value not given is the
    field's default (called anew each time, like `timezone.now` or `dict`). A related
    object may be given by its field's name (`task=task`, kept on the instance as the ORM
    keeps it) or its id by the attname (`task_id=...`). The auto primary key comes back
    from the database (RETURNING) and is set on the instance, which is returned saved
    (`_state.adding` False), as `create` returns it. Refused at first use: a model with
    save signals, or a field that is not plain (`_plain`) or gets a database default."""

    MANY = 8  # rows in one prepared statement (`insert_all`); an event's AG-UI rows: 1 to 3

    def __init__(self, model: type[Model]) -> None:
        self.model = model
        meta = model._meta
        self.fields = [f for f in meta.local_concrete_fields if f is not meta.auto_field]
        self.auto = meta.auto_field
        self._concrete = meta.concrete_fields
        self._compiled: dict[tuple[str, int], tuple[str, bool]] = {}

    def _compile(self, using: str, rows: int) -> tuple[str, bool]:
        """The INSERT of `rows` rows, and whether its parameters are one array per
        column (PostgreSQL's UNNEST for several rows) rather than row after row."""
        _refuse_signals(self.model)
        meta = self.model._meta
        connection = connections[using]
        for field in self.fields:
            if not _plain(field) or (field.has_db_default() and not field.has_default()):
                raise PreparedShapeError(f"{meta.label}.{field.name} is not a plain column")
        # A field with a database default that also has the model's default is written
        # like any other (every field is), so only the auto key comes back.
        returning = [f for f in meta.db_returning_fields if f is self.auto or not f.has_default()]
        if returning != ([self.auto] if self.auto else []):
            raise PreparedShapeError(f"{meta.label} returns {returning} from an insert")
        features = connection.features
        if self.auto and not (
            features.can_return_rows_from_bulk_insert
            if rows > 1
            else features.can_return_columns_from_insert
        ):
            raise PreparedShapeError(f"{connection.vendor} cannot return the inserted ids")
        query = InsertQuery(self.model)
        templates = [self.model(**{f.attname: None for f in self.fields}) for _ in range(rows)]
        query.insert_values(self.fields, templates)
        compiler = query.get_compiler(using=using)
        compiler.returning_fields = returning
        [(sql, params)] = compiler.as_sql()
        columns = len(self.fields)
        by_column = rows > 1 and len(params) == columns and all(type(p) is list for p in params)
        if not by_column and (len(params) != rows * columns or sql.count("%s") != len(params)):
            raise PreparedShapeError(f"{meta.label}: one parameter per value expected: {sql}")
        return sql, by_column

    def _statement(self, using: str, rows: int) -> tuple[str, bool]:
        compiled = self._compiled.get((using, rows))
        if compiled is None:
            compiled = self._compiled[using, rows] = self._compile(using, rows)
        return compiled

    def _row(self, values: dict[str, Any]) -> tuple[list[Any], list[tuple[Field, Model]]]:
        """The row's values in field order (defaults for those not given) and the related
        objects given by name, refused as `create` refuses them."""
        related = []
        row = []
        given = 0
        for field in self.fields:
            if field.attname in values:
                value = values[field.attname]
                given += 1
            elif field.name in values:  # a related object, as create(task=task) takes it
                target = values[field.name]
                if target is not None and target.pk is None:  # as the ORM refuses it
                    raise ValueError(
                        f"save() prohibited to prevent data loss due to unsaved related "
                        f"object '{field.name}'."
                    )
                related.append((field, target))
                value = None if target is None else target.pk
                given += 1
            else:
                value = field.get_default()
            row.append(value)
        if given != len(values):  # as the model's __init__ refuses a name it does not have
            unknown = set(values) - {n for f in self.fields for n in (f.name, f.attname)}
            raise TypeError(f"{self.model.__name__} has no field named {sorted(unknown)}")
        return row, related

    def along(self, using: str = "default", **values: Any) -> tuple[str, list[Any]]:
        """This insert of one row as (sql, params), to be run with another insert's
        statement (`insert(..., along=[...])`) instead of by itself; its row is not
        returned."""
        sql, _ = self._statement(using, 1)
        row, _ = self._row(values)
        return sql, self._prepped(row, connections[using])

    def _prepped(self, row: list[Any], connection: Any) -> list[Any]:
        return [f.get_db_prep_save(v, connection) for f, v in zip(self.fields, row, strict=True)]

    def insert(
        self, using: str = "default", *, along: Sequence[tuple[str, list[Any]]] = (), **values: Any
    ) -> Model:
        """Insert one row (see the class's docstring); returns its saved instance.

        `along`: other inserts (`PreparedInsert.along`) that go with it. On PostgreSQL they
        are one statement with this one (data-modifying WITH queries, each run once and to
        completion whether or not it is read): one round trip instead of several, for the
        writes every change makes (a2a.services._core.record). Elsewhere (SQLite, in-process
        calls) they run first, one by one."""
        sql, _ = self._statement(using, 1)
        connection = connections[using]
        row, related = self._row(values)
        params = self._prepped(row, connection)
        with transaction.mark_for_rollback_on_error(using), connection.cursor() as cursor:
            if along and connection.vendor == "postgresql":
                parts = ", ".join(f"along_{i} AS ({s})" for i, (s, _) in enumerate(along))
                sql = f"WITH {parts} {sql}"
                params = [*itertools.chain.from_iterable(p for _, p in along), *params]
            else:
                for other_sql, other_params in along:
                    cursor.execute(other_sql, other_params)
            cursor.execute(sql, params)
            returned = cursor.fetchone() if self.auto else None
        saved = {f.attname: v for f, v in zip(self.fields, row, strict=True)}
        if self.auto:
            saved[self.auto.attname] = returned[0]
        # as a row read back: positional __init__, saved (_state.adding False) on `using`
        obj = self.model.from_db(using, None, [saved[f.attname] for f in self._concrete])
        for field, target in related:
            field.set_cached_value(obj, target)
        return obj

    def insert_all(self, objs: list[Model], using: str = "default") -> list[Model]:
        """`bulk_create(objs)` for new instances of a model with an auto key in one
        statement: their ids set from the database's, saved on `using`. More than MANY rows
        (but on PostgreSQL, whose statement takes arrays of any length),
        or rows that already have a key, go through bulk_create itself."""
        if not objs:
            return objs
        if not self.auto or any(o.pk is not None for o in objs):
            # rows with their keys: the ORM's key handling
            return self.model._base_manager.using(using).bulk_create(objs)
        rows = len(objs)
        if rows > self.MANY:
            # PostgreSQL's statement for several rows takes one array per column (UNNEST):
            # the same text for any number of rows, so one compiled statement serves a
            # projection pass of 64 tasks as well as one of 2. Elsewhere the ORM batches.
            sql, by_column = self._statement(using, 2)
            if not by_column:
                return self.model._base_manager.using(using).bulk_create(objs)
        else:
            sql, by_column = self._statement(using, rows)
        connection = connections[using]
        rows = [
            [f.get_db_prep_save(getattr(obj, f.attname), connection) for f in self.fields]
            for obj in objs
        ]
        params = (
            [list(c) for c in zip(*rows, strict=True)]
            if by_column
            else list(itertools.chain.from_iterable(rows))
        )
        with transaction.mark_for_rollback_on_error(using), connection.cursor() as cursor:
            cursor.execute(sql, params)
            returned = cursor.fetchall() if self.auto else ()
        for obj, ids in itertools.zip_longest(objs, returned):
            if self.auto:
                setattr(obj, self.auto.attname, ids[0])
            obj._state.adding = False
            obj._state.db = using
        return objs


@dataclass(frozen=True)
class _CompiledUpdate:
    sql: str
    fields: tuple[Field, ...]  # the parameters' fields, in order (a NULL is in the SQL)


class PreparedUpdate:
    """`obj.save(update_fields=...)` with the UPDATE compiled once per alias, field set
    and set of NULL values (the compiler writes `= NULL` into the SQL, not a parameter).

    The columns are set in the model's field order, as the ORM sets them, from the
    instance's attributes, and the row is the instance's primary key. Like save() it
    raises DatabaseError when no row was updated. Refused at first use: a model with save
    signals, a field that is not plain, a primary key not compared verbatim."""

    def __init__(self, model: type[Model]) -> None:
        self.model = model
        self._compiled: dict[tuple, _CompiledUpdate] = {}
        self._by_name: dict[str, Field] | None = None

    def _compile(
        self, using: str, obj: Model, fields: list[Field], nulls: frozenset
    ) -> _CompiledUpdate:
        _refuse_signals(self.model)
        meta = self.model._meta
        if meta.pk in fields:
            raise PreparedShapeError(f"{meta.label}: the key is not saved with update_fields")
        for field in fields:
            if not _plain(field):
                raise PreparedShapeError(f"{meta.label}.{field.name} is not a plain column")
        key = meta.pk.target_field if meta.pk.is_relation else meta.pk
        if key.get_internal_type() in ("AutoField", "BigAutoField", "IntegerField"):
            marker: Any = _INT_MARKER_BASE
        elif key.get_internal_type() == "CharField":
            marker = _STR_MARKER.format("pk")
        else:
            raise PreparedShapeError(f"{meta.label}: a {key.get_internal_type()} key")
        query = UpdateQuery(self.model)
        # this instance's values: any other non-NULL value compiles to the same placeholder
        query.add_update_fields([(f, None, getattr(obj, f.attname)) for f in fields])
        query.add_q(Q(pk=marker))
        sql, params = query.get_compiler(using=using).as_sql()
        sent = [f for f in fields if f.attname not in nulls]
        if len(params) != len(sent) + 1 or params[-1] != marker or sql.count("%s") != len(params):
            raise PreparedShapeError(f"{meta.label}: the key must come last, verbatim: {sql}")
        return _CompiledUpdate(sql=sql, fields=tuple(sent))

    def save(self, obj: Model, update_fields: tuple[str, ...], using: str = "default") -> int:
        """Write `update_fields` (attnames or names) of `obj`'s row, as
        `obj.save(update_fields=...)` does: DatabaseError when there is no such row."""
        fields = self._fields(update_fields, ordered=True)
        values = {f.attname: getattr(obj, f.attname) for f in fields}
        if not self._run(using, update_fields, obj, fields, values, obj.pk):
            raise DatabaseError("Save with update_fields did not affect any rows.")
        return 1

    def update(self, pk: Any, using: str = "default", **values: Any) -> int:
        """`filter(pk=pk).update(**values)` (attnames, plain values, set in the order
        given as the ORM sets them): the number of rows updated, 0 or 1."""
        names = tuple(values)
        fields = self._fields(names, ordered=False)
        return self._run(using, names, None, fields, values, pk)

    def _run(
        self,
        using: str,
        names: tuple[str, ...],
        obj: Model | None,
        fields: list[Field],
        values: dict[str, Any],
        pk: Any,
    ) -> int:
        nulls = frozenset(name for name, value in values.items() if value is None)
        key = (using, names, nulls)
        compiled = self._compiled.get(key)
        if compiled is None:
            if obj is None:  # an instance holding the values, to compile with
                obj = self.model(**{self.model._meta.pk.attname: pk, **values})
            compiled = self._compiled[key] = self._compile(using, obj, fields, nulls)
        connection = connections[using]
        params = [f.get_db_prep_save(values[f.attname], connection) for f in compiled.fields]
        params.append(self.model._meta.pk.get_db_prep_value(pk, connection))
        with transaction.mark_for_rollback_on_error(using), connection.cursor() as cursor:
            cursor.execute(compiled.sql, params)
            return cursor.rowcount

    def _fields(self, names: tuple[str, ...], ordered: bool) -> list[Field]:
        """The named columns: in the model's order (save's SET order) or as named."""
        by_name = self._by_name
        if by_name is None:
            by_name = self._by_name = {
                name: f
                for f in self.model._meta.local_concrete_fields
                for name in (f.name, f.attname)
            }
        try:
            fields = [by_name[name] for name in names]
        except KeyError as missing:
            raise PreparedShapeError(f"{self.model._meta.label} has no column {missing}") from None
        if ordered:
            order = self.model._meta.local_concrete_fields
            fields = sorted(set(fields), key=order.index)
        return fields
