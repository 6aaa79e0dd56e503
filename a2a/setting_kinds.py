"""The kinds of setting a2a/conf.py declares Taskdeck's settings with, and how a section of
them is read: what each kind parses from an environment variable, what values it accepts
(the system checks ask the same), and the descriptor through which code reads a value
from settings.TASKDECK at call time.

Why a descriptor over the live dict, not a frozen copy: tests (pytest-django's `settings`,
`override_settings`, `monkeypatch.setitem` on the dict) change settings while the process
runs, and a read must see that at once. Why the dict is held between reads: an attribute
of Django's lazy settings object costs more than the rest of a read together.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import math
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, overload

from django.conf import settings
from django.core.signals import setting_changed

T = TypeVar("T")
Environ = Mapping[str, str]

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off", ""})


class Refused(ValueError):
    """A value a setting does not accept; its text says why, without the name."""


class Setting(Generic[T]):
    """One setting. `env` is the variable that sets it (None: set in Python settings only);
    `default` a value, or a function of the environment for one that depends on another
    variable. Bounds: `more_than`, `at_least`; `choices`: the values allowed;
    `secret`: messages never show the value."""

    what = "a value"  # how a refusal names the kind

    def __init__(
        self,
        env: str | None,
        default: T | Callable[[Environ], T],
        meaning: str,
        *,
        key: str | None = None,
        more_than: float | None = None,
        at_least: float | None = None,
        choices: tuple[str, ...] | None = None,
        secret: bool = False,
    ) -> None:
        self.env, self.default, self.meaning = env, default, meaning
        self.secret = secret  # a refusal never repeats the value
        self.key = key or ""
        self.more_than, self.at_least, self.choices = more_than, at_least, choices
        self.section: type[Section] = Section

    def __set_name__(self, owner: type[Section], name: str) -> None:
        self.section = owner
        self.key = self.key or name.upper()

    @overload
    def __get__(self, section: None, owner: type | None = None) -> Setting[T]: ...
    @overload
    def __get__(self, section: Section, owner: type | None = None) -> T: ...
    def __get__(self, section: Section | None, owner: type | None = None) -> Any:
        if section is None:
            return self
        try:
            return section.values()[self.key]
        except KeyError:  # a test's override left it out
            return self.default_for(os.environ)

    def __set__(self, section: Section, value: T) -> None:
        raise AttributeError(f"{self.label()} is read-only here: change it in settings")

    # --- reading the environment ---------------------------------------------------------

    def default_for(self, environ: Environ) -> T:
        if callable(self.default):
            return self.default(environ)
        return self.default

    def from_env(self, environ: Environ) -> T:
        """The value the environment gives (Refused: a value it cannot be)."""
        raw = environ.get(self.env) if self.env else None
        return self.default_for(environ) if raw is None else self.parse(raw)

    def parse(self, raw: str) -> T:
        raise NotImplementedError

    # --- checking a value ----------------------------------------------------------------

    def is_kind(self, value: Any) -> bool:
        raise NotImplementedError

    def problem(self, value: Any) -> str | None:
        """Why `value` is not acceptable (None: it is)."""
        if not self.is_kind(value):
            return f"must be {self.what}"
        if self.choices is not None and value not in self.choices:
            return "must be one of " + ", ".join(self.choices)
        if self.more_than is not None and not value > self.more_than:
            return f"must be more than {self.more_than:g}"
        if self.at_least is not None and not value >= self.at_least:
            return f"must be at least {self.at_least:g}"
        return None

    def live(self) -> Any:
        """The value as Django's settings hold it now."""
        return self.__get__(self.section(), self.section)

    def shown(self, value: Any) -> str:
        """The value as a message may show it."""
        return "(not shown: a secret)" if self.secret else repr(value)

    def label(self) -> str:
        """The variable, or where in Python settings a setting without one lives."""
        return self.env or self.section.path(self.key)


class Number(Setting[float]):
    what = "a number"

    def default_for(self, environ: Environ) -> float:
        return float(super().default_for(environ))  # 15 declared, 15.0 read (as ever)

    def parse(self, raw: str) -> float:
        try:
            return float(raw)
        except ValueError:
            raise Refused("not a number") from None

    def is_kind(self, value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        return math.isfinite(value)


class Whole(Setting[int]):
    what = "a whole number"

    def parse(self, raw: str) -> int:
        try:
            return int(raw)
        except ValueError:
            raise Refused("not a whole number") from None

    def is_kind(self, value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool)


class Switch(Setting[bool]):
    what = "on or off"

    def parse(self, raw: str) -> bool:
        word = raw.strip().lower()
        if word in TRUE_WORDS:
            return True
        if word in FALSE_WORDS:
            return False
        raise Refused("not a switch: use 1/0, true/false, yes/no or on/off")

    def is_kind(self, value: Any) -> bool:
        return isinstance(value, bool)


class Text(Setting[str]):
    what = "text"

    def parse(self, raw: str) -> str:
        if (why := self.problem(raw)) is not None:
            raise Refused(why)
        return raw

    def is_kind(self, value: Any) -> bool:
        return isinstance(value, str)


class Url(Text):
    """A base URL (empty: none)."""

    what = "an http:// or https:// URL"

    def is_kind(self, value: Any) -> bool:
        return isinstance(value, str) and (not value or value.startswith(("http://", "https://")))


class Address(Text):
    """`host:port` as clients dial it, no scheme (empty: none)."""

    what = "host:port"

    def is_kind(self, value: Any) -> bool:
        if not isinstance(value, str):
            return False
        host, _, port = value.rpartition(":")
        return not value or (bool(host) and port.isdigit() and "/" not in value)


class Names(Setting[list[str]]):
    """A comma-separated list (empty items dropped)."""

    what = "a list of names"

    def parse(self, raw: str) -> list[str]:
        names = [v.strip() for v in raw.split(",") if v.strip()]
        if (why := self.problem(names)) is not None:
            raise Refused(why)
        return names

    def is_kind(self, value: Any) -> bool:
        return isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)

    def problem(self, value: Any) -> str | None:
        if not self.is_kind(value):
            return f"must be {self.what}"
        if self.choices is not None and (unknown := [v for v in value if v not in self.choices]):
            return f"{', '.join(unknown)}: not one of " + ", ".join(self.choices)
        return None


class Agents(Names):
    """The agent modules: the built-in ones, then those the variable adds."""

    def __init__(self, env: str, builtin: tuple[str, ...], meaning: str, *, key: str) -> None:
        super().__init__(env, lambda environ: list(builtin), meaning, key=key)
        self.builtin = builtin

    def parse(self, raw: str) -> list[str]:
        return [*self.builtin, *super().parse(raw)]


class FernetKeys(Names):
    """Fernet keys: each the URL-safe base64 of 32 bytes."""

    what = "a list of Fernet keys"

    def problem(self, value: Any) -> str | None:
        if (why := super().problem(value)) is not None:
            return why
        for i, key in enumerate(value, 1):
            try:
                ok = len(base64.urlsafe_b64decode(key.encode())) == 32
            except (binascii.Error, ValueError):
                ok = False
            if not ok:  # the key itself is never repeated in a message
                return f"key {i} is not a Fernet key (URL-safe base64 of 32 bytes)"
        return None


class Networks(Names):
    """Addresses or networks (CIDR), each as `ipaddress.ip_network` reads it (host bits
    allowed: `10.0.0.7/24` means 10.0.0.0/24)."""

    what = "a list of addresses or CIDR networks"

    def problem(self, value: Any) -> str | None:
        if (why := super().problem(value)) is not None:
            return why
        for item in value:
            try:
                ipaddress.ip_network(item, strict=False)
            except ValueError:
                return f"{item}: not an address or a CIDR network"
        return None


class Mapped(Setting[dict[str, Any]]):
    """A mapping set in Python settings only."""

    what = "a mapping"

    def parse(self, raw: str) -> dict[str, Any]:
        raise Refused("set in Python settings only")

    def is_kind(self, value: Any) -> bool:
        return isinstance(value, dict)


# --- sections ----------------------------------------------------------------------------


# settings.TASKDECK, held between reads: an attribute of Django's lazy settings object costs
# more than the rest of a read (about 250 ns of 370). Replacing it (override_settings, the
# `settings` fixture) sends setting_changed, which lets it go; a change made inside the dict
# is seen anyway, since the dict itself is held.
_held: dict[str, Any] | None = None


def _hold() -> dict[str, Any]:
    global _held
    _held = settings.TASKDECK
    return _held


def _let_go(*, setting: str, **kwargs: Any) -> None:
    global _held
    if setting == "TASKDECK":
        _held = None


setting_changed.connect(_let_go, dispatch_uid="taskdeck-conf-let-go")


class Section:
    """Settings kept together under one key of settings.TASKDECK (None: its top level)."""

    key: str | None = None

    def values(self) -> Mapping[str, Any]:
        root = _held if _held is not None else _hold()
        return root if self.key is None else root[self.key]

    @classmethod
    def declared(cls) -> Iterator[Setting[Any]]:
        for klass in reversed(cls.__mro__):
            for value in vars(klass).values():
                if isinstance(value, Setting):
                    yield value

    @classmethod
    def path(cls, key: str) -> str:
        inner = "" if cls.key is None else f"[{cls.key!r}]"
        return f"TASKDECK{inner}[{key!r}]"


# --- relations between settings ----------------------------------------------------------


@dataclass(frozen=True)
class Relation:
    """`first` and `second` must satisfy `holds`; `why` says so (the check's message)."""

    first: Setting[Any]
    second: Setting[Any]
    holds: Callable[[Any, Any], bool]
    why: str

    def problem(self, value: Callable[[Setting[Any]], Any]) -> str | None:
        a, b = value(self.first), value(self.second)
        if self.first.problem(a) is not None or self.second.problem(b) is not None:
            return None  # a bad value is reported on its own
        if self.holds(a, b):
            return None
        return f"{self.first.label()}={a:g} {self.why.format(second=self.second.label(), b=b)}"
