"""Scenario documents: loading TOML, command-line overrides and validation.

A :class:`Scenario` holds the document exactly as written (a dict of TOML values). The core
checks it and fills in the defaults (:meth:`Scenario.resolved`); the format is described in
``docs/scenario.md``.
"""

from __future__ import annotations

import copy
import json
import math
import os
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import tomli_w

from startlab import _core

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = [
    "Scenario",
    "ScenarioError",
    "core_error",
    "describe_type",
    "dumps_toml",
    "parse_override",
    "parse_toml",
    "parse_value",
    "resolve_document",
    "set_path",
]

_TOML_POSITION = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")
_TOML_AT_END = re.compile(r"\s*\(at end of document\)\s*$")
_JSON_POSITION = re.compile(r" at line [0-9]+ column [0-9]+$")


class ScenarioError(ValueError):
    """A scenario is invalid: malformed TOML, a bad override or a field the core rejects.

    The message starts with where the problem is (a dotted field path such as
    ``topology.bottleneck.rate``, or a file name and line) and says what is wrong.
    """


def read_text(path: Path, what: str, error: type[ScenarioError]) -> str:
    """The UTF-8 text of ``path``; a missing, unreadable or non-UTF-8 file raises ``error``
    naming the file (``what`` says what the file should have been)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except IsADirectoryError:
        raise error(f"{path}: is a directory, not {what}") from None
    except OSError as e:
        raise error(f"{path}: cannot read: {e.strerror or e}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise error(f"{path}: not UTF-8 text (byte {e.start})") from None


class Scenario:
    """A scenario document, checked by the core when it is created.

    Build one with :meth:`load`, :meth:`from_toml` or :meth:`from_dict`; each accepts
    ``overrides`` (``"dotted.path=value"`` strings, see :meth:`with_overrides`) that are applied
    before the document is checked. Instances are immutable: :meth:`with_overrides` returns a new
    one.
    """

    __slots__ = ("_document", "_resolved", "_source")

    def __init__(self, document: Mapping[str, Any], *, source: str | None = None) -> None:
        if not isinstance(document, Mapping):
            raise ScenarioError(
                f"a scenario must be a table of fields, not {type(document).__name__}"
            )
        self._document: dict[str, Any] = copy.deepcopy(dict(document))
        self._source = source
        self._resolved: dict[str, Any] = resolve_document(self._document)

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, overrides: Iterable[str] = ()) -> Scenario:
        """Read a TOML scenario file.

        Raises :class:`ScenarioError` if the file can't be read, isn't valid TOML (the message
        names the file, line and column) or describes an invalid scenario.
        """
        path = Path(path)
        text = read_text(path, "a scenario file", ScenarioError)
        document = files_relative_to(parse_toml(text, str(path)), path.parent)
        return cls(_apply_overrides(document, overrides), source=str(path))

    @classmethod
    def from_toml(
        cls, text: str, *, source: str = "<string>", overrides: Iterable[str] = ()
    ) -> Scenario:
        """Parse a scenario from TOML text; ``source`` names it in error messages."""
        document = parse_toml(text, source)
        return cls(_apply_overrides(document, overrides), source=source)

    @classmethod
    def from_dict(cls, document: Mapping[str, Any], *, overrides: Iterable[str] = ()) -> Scenario:
        """Use a document already in memory (the dict form of the TOML file)."""
        if not isinstance(document, Mapping):
            raise ScenarioError(
                f"a scenario must be a table of fields, not {type(document).__name__}"
            )
        return cls(_apply_overrides(copy.deepcopy(dict(document)), overrides))

    @classmethod
    def of(
        cls,
        scenario: Scenario | Mapping[str, Any] | str | os.PathLike[str],
        *,
        overrides: Iterable[str] = (),
    ) -> Scenario:
        """A :class:`Scenario`, a document dict or the path of a TOML file (a ``str`` is always
        a path) as a checked Scenario, with ``overrides`` applied."""
        if isinstance(scenario, Scenario):
            return scenario.with_overrides(overrides) if overrides else scenario
        if isinstance(scenario, Mapping):
            return cls.from_dict(scenario, overrides=overrides)
        return cls.load(scenario, overrides=overrides)

    def with_overrides(self, overrides: Iterable[str]) -> Scenario:
        """Return a copy with ``"dotted.path=value"`` assignments applied.

        The path walks tables by key and lists by integer index (``flows.0.cc=cubic``); missing
        tables are created, but a list index must exist. The value is read as a TOML value when
        it is one (``10``, ``true``, ``"1BDP"``, ``{ kind = "red" }``) and kept as text
        otherwise (``100Mbps``).
        """
        return Scenario(_apply_overrides(self.to_dict(), overrides), source=self._source)

    def describe(self) -> _core.Description:
        """What this scenario resolves to, without running it: every link with its name,
        alias, rate and delay; the hosts; every flow (each copy of a ``count`` entry) with its
        propagation round-trip time; the reference BDP; the sampled links."""
        try:
            return _core.describe(self.to_json())
        except ValueError as e:  # pragma: no cover - the document was checked when built
            raise core_error(e) from None

    # -- access -------------------------------------------------------------------------------

    @property
    def source(self) -> str | None:
        """The file (or ``"<string>"``) the scenario was read from, if any."""
        return self._source

    @property
    def name(self) -> str:
        """The scenario's ``name`` (after defaults)."""
        return str(self._resolved.get("name", "scenario"))

    def to_dict(self) -> dict[str, Any]:
        """A copy of the document as written (no defaults filled in)."""
        return copy.deepcopy(self._document)

    def resolved(self) -> dict[str, Any]:
        """A copy of the resolved document: every default filled in, ``BDP`` limits in packets."""
        return copy.deepcopy(self._resolved)

    def to_json(self) -> str:
        """The document as the JSON text the core reads."""
        return _to_json(self._document)

    def to_toml(self) -> str:
        """The document as TOML text (``Scenario.from_toml(s.to_toml())`` gives back ``s``)."""
        return dumps_toml(self._document)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Scenario):
            return NotImplemented
        return self._document == other._document

    def __hash__(self) -> int:
        return hash(self.to_json())

    def __repr__(self) -> str:
        where = f" from {self._source}" if self._source else ""
        return f"<Scenario {self.name!r}{where}>"


def dumps_toml(document: Mapping[str, Any]) -> str:
    """Write a document as TOML; ``None`` values (no TOML equivalent) are left out."""
    return tomli_w.dumps(_drop_none(document))


# -- overrides ---------------------------------------------------------------------------------


def parse_override(assignment: str) -> tuple[list[str], Any]:
    """Split ``"a.b.0=value"`` into its path and its value (TOML if it parses, else text).

    List entries are numbered from 0, written ``flows.0.cc`` or ``flows[0].cc``.
    """
    key, sep, raw = assignment.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ScenarioError(f"override {assignment!r}: expected PATH=VALUE, e.g. flows.0.cc=reno")
    path = [part.strip() for part in re.sub(r"\[\s*([0-9]+)\s*\]", r".\1", key).split(".")]
    if not all(path):
        raise ScenarioError(f"override {assignment!r}: {key!r} has an empty path component")
    return path, parse_value(raw.strip())


def parse_value(raw: str) -> Any:
    """A ``--set`` value: TOML if it parses as a TOML value, else the text itself."""
    try:
        parsed = tomllib.loads(f"value = {raw}")
    except tomllib.TOMLDecodeError:
        return raw
    if set(parsed) != {"value"}:  # e.g. "1\nother = 2"
        return raw
    return parsed["value"]


#: The link fields whose schedules may name a file (``trace``, ``csv``).
_SCHEDULED = ("rate", "delay", "loss", "reverse_rate", "reverse_delay", "reverse_loss")


def files_relative_to(document: dict[str, Any], base: Path) -> dict[str, Any]:
    """The document with every relative ``trace`` and ``csv`` file of a link's schedules made
    absolute, relative to ``base`` (the scenario file's directory), so that a scenario names
    its traces as it sees them wherever it is run from."""
    topology = document.get("topology")
    if not isinstance(topology, dict):
        return document
    links: list[Any] = [topology.get("bottleneck"), topology.get("access")]
    for key in ("hop", "pair"):
        entries = topology.get(key)
        if isinstance(entries, list):
            for entry in entries:
                links.append(entry)
                if isinstance(entry, dict):
                    links += [entry.get("sender_access"), entry.get("receiver_access")]
    for link in links:
        if not isinstance(link, dict):
            continue
        for field in _SCHEDULED:
            schedule = link.get(field)
            if not isinstance(schedule, dict):
                continue
            for key in ("trace", "csv"):
                file = schedule.get(key)
                if isinstance(file, str) and file and not Path(file).is_absolute():
                    schedule[key] = str((base / file).resolve())
    return document


def _apply_overrides(document: dict[str, Any], overrides: Iterable[str]) -> dict[str, Any]:
    if isinstance(overrides, str):
        overrides = [overrides]
    for assignment in overrides:
        path, value = parse_override(assignment)
        set_path(document, path, value)
    return document


def set_path(document: dict[str, Any], path: list[str], value: Any) -> None:
    """Set ``document[path...] = value``, creating tables on the way; list entries by index.
    Raises :class:`ScenarioError` naming the path when it cannot."""
    node: Any = document
    shown = ""  # the path so far, written as in the core's messages: flows[0].cc
    for depth, part in enumerate(path):
        last = depth == len(path) - 1
        if isinstance(node, dict):
            if last:
                node[part] = value
            else:
                node = node.setdefault(part, {})
            shown = f"{shown}.{part}" if shown else part
        elif isinstance(node, list):
            if not re.fullmatch(r"[0-9]+", part):
                expected = f"a number from 0 to {len(node) - 1}" if node else "nothing, it is empty"
                raise ScenarioError(f"{shown}.{part}: {shown} is a list, index it with {expected}")
            index = int(part)
            if index >= len(node):
                entries = "entry" if len(node) == 1 else "entries"
                raise ScenarioError(
                    f"{shown}[{index}]: no such entry, {shown} has {len(node)} {entries}"
                )
            if last:
                node[index] = value
            else:
                node = node[index]
            shown = f"{shown}[{index}]"
        else:
            raise ScenarioError(
                f"{shown}.{part}: {shown} is {describe_type(node)}, not a table or a list"
            )


def describe_type(value: Any) -> str:
    """What a value is, for messages: ``a string ("20ms")``, ``a table``."""
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, (int, float)):
        return f"a number ({value})"
    if isinstance(value, str):
        return f"a string ({json.dumps(value, ensure_ascii=False)})"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "a table"
    return f"a {type(value).__name__}"


# -- TOML and JSON -----------------------------------------------------------------------------


def parse_toml(text: str, source: str) -> dict[str, Any]:
    """A TOML document; a syntax error becomes a :class:`ScenarioError` naming ``source``, the
    line and the column."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        message = str(e)
        position = _TOML_POSITION.search(message)
        if position:
            line, column = position.groups()
            where = f"line {line}, column {column}"
            message = message[: position.start()]
        elif _TOML_AT_END.search(message):
            line = str(text.count("\n") + 1)
            where = f"line {line} (end of file)"
            message = _TOML_AT_END.sub("", message)
        else:
            where = "somewhere"
        message = message.strip().rstrip(".")
        if message:
            message = message[0].lower() + message[1:]
        raise ScenarioError(f"{source}, {where}: malformed TOML: {message}") from None


def resolve_document(document: dict[str, Any]) -> dict[str, Any]:
    """The core's filled-in form of a document (every default, ``BDP`` in packets); raises
    :class:`ScenarioError` on the first invalid field."""
    try:
        resolved_json = _core.resolve(_to_json(document))
    except ValueError as e:
        raise core_error(e) from None
    resolved = json.loads(resolved_json)
    if not isinstance(resolved, dict):  # pragma: no cover - a core bug
        raise TypeError("the core resolved a scenario to something other than a table")
    return resolved


def core_error(error: ValueError) -> ScenarioError:
    """A core validation error as a ScenarioError, without positions in the JSON text the core
    was given (which the user never sees)."""
    return ScenarioError(_JSON_POSITION.sub("", str(error)))


def _to_json(document: Mapping[str, Any]) -> str:
    return json.dumps(_jsonable(document, ""), allow_nan=False)


def _jsonable(value: Any, path: str) -> Any:
    """Convert TOML values to JSON ones; reject what JSON can't carry, naming the field."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v, f"{path}.{k}" if path else str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, float) and not math.isfinite(value):
        raise ScenarioError(f"{path}: {value} is not allowed, numbers must be finite")
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    # TOML dates and times: no scenario field takes one, pass the text so the core names it.
    return str(value)


def _drop_none(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [_drop_none(v) for v in value if v is not None]
    return value
