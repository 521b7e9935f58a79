"""Reading scenario YAML safely, remembering where every key and value stood.

Only ``yaml.SafeLoader`` is used, and every YAML text ormock reads (scenario files, admin bodies)
goes through ``load_yaml`` or ``safe_document``. ``load_yaml`` returns the data and a ``Lines``
map from a path (``("steps", 0, "reply")``) to its 1-based line, so every later error can name
file, line and key.

A file is read only when it is a regular file of at most ``MAX_FILE_BYTES``. A document is
bounded while it is composed: at most ``MAX_NODES`` nodes counting an aliased
subtree each time it is reached (so a "billion laughs" of nested aliases is refused at the alias
that crosses the bound, before anything is built), at most ``MAX_ALIASES`` alias references, and
at most ``MAX_DEPTH`` levels of nesting. ``bound_data`` holds parsed JSON and mappings to the
same bounds.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path as FilePath
from typing import Any

import yaml

__all__ = ["MAX_ALIASES", "MAX_DEPTH", "MAX_FILE_BYTES", "MAX_NODES", "Lines", "ScenarioError",
           "TagNotAllowed", "bound_data", "lines_of", "load_yaml", "path_text", "read_text",
           "safe_document", "untagged_document"]

MAX_NODES = 100_000  # keys, values and items, an aliased subtree counted each time it is used
MAX_ALIASES = 10_000  # '*name' references
MAX_DEPTH = 64  # levels of nested mappings and lists
MAX_FILE_BYTES = 256 << 20  # a scenario or cassette file read whole, at most

Path = tuple[str | int, ...]


def path_text(path: Path) -> str:
    """``("steps", 0, "reply")`` -> ``steps[0].reply``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


class ScenarioError(ValueError):
    """A mistake in a scenario, with the file, line and key it is at."""

    def __init__(
        self, message: str, *, file: str | None = None, line: int | None = None, key: str = ""
    ) -> None:
        self.message = message
        self.file = file
        self.line = line
        self.key = key
        super().__init__(str(self))

    def __str__(self) -> str:
        key = f"{self.key}: " if self.key else ""
        if self.file is None and self.line is None:  # a mapping, or no scenario at all
            return f"{key}{self.message}"
        where = self.file or "<scenario>"
        if self.line is not None:
            where += f":{self.line}"
        return f"{where}: {key}{self.message}"


class TagNotAllowed(ScenarioError):
    """A YAML tag the safe loader does not build (``!!python/object/apply:...``), at its line;
    ``tag``: the whole tag (``tag:yaml.org,2002:python/...``)."""

    def __init__(self, tag: str, *, file: str | None, line: int, key: str = "") -> None:
        self.tag = tag
        shown = "!!" + tag.removeprefix("tag:yaml.org,2002:")
        super().__init__(f"the YAML tag {shown!r} is not allowed: ormock reads plain YAML, never "
                         "a Python object or any other tag; write the value without it",
                         file=file, line=line, key=key)


@dataclass
class Lines:
    """Where each path of a YAML document stood (1-based lines)."""

    file: str | None = None
    at: dict[Path, int] = field(default_factory=dict)

    def line(self, path: Path) -> int | None:
        """The line of ``path``, or of its nearest ancestor that has one."""
        while True:
            if path in self.at:
                return self.at[path]
            if not path:
                return None
            path = path[:-1]

    def error(self, message: str, path: Path = ()) -> ScenarioError:
        return ScenarioError(message, file=self.file, line=self.line(path), key=path_text(path)
                             if path else "")

    def child(self, prefix: Path) -> Lines:
        """The lines of a sub-document, with paths relative to ``prefix``."""
        size = len(prefix)
        return Lines(self.file, {p[size:]: n for p, n in self.at.items() if p[:size] == prefix})


_STR = "tag:yaml.org,2002:str"
_MERGE = "tag:yaml.org,2002:merge"
_KINDS = {"int": "a number", "float": "a number", "bool": "true or false", "null": "null",
          "timestamp": "a date"}


def _walk(node: yaml.Node, path: Path, lines: dict[Path, int], file: str | None,
          paths: dict[yaml.Node, Path]) -> None:
    lines.setdefault(path, node.start_mark.line + 1)
    paths.setdefault(node, path)
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key, value in node.value:
            line = key.start_mark.line + 1
            if isinstance(key, yaml.ScalarNode) and key.tag == _MERGE:
                continue  # '<<: *anchor': the merged keys stand where the anchor is
            if not (isinstance(key, yaml.ScalarNode) and key.tag == _STR):
                problem = "not a mapping or a list"
                if isinstance(key, yaml.ScalarNode):
                    kind = key.tag.rsplit(":", 1)[-1]
                    problem = (f"and YAML reads {key.value!r} as "
                               f"{_KINDS.get(kind, kind)}: put it in quotes")
                raise ScenarioError(f"a key must be a string, {problem}", file=file, line=line,
                                    key=path_text(path) if path else "")
            name = key.value
            if name in seen:
                raise ScenarioError(f"duplicate key {name!r} (also on line {seen[name]}); YAML "
                                    "would keep only the last one", file=file, line=line,
                                    key=path_text((*path, name)))
            seen[name] = line
            where = (*path, name)
            lines[where] = line
            _walk(value, where, lines, file, paths)
    elif isinstance(node, yaml.SequenceNode):
        for index, value in enumerate(node.value):
            _walk(value, (*path, index), lines, file, paths)


class _BoundedLoader(yaml.SafeLoader):
    """The safe loader, counting nodes as the document is composed (see the module docstring)."""

    def __init__(self, text: str, file: str | None) -> None:
        super().__init__(text)
        self.file = file
        self.nodes = 0
        self.aliases = 0
        self.depth = 0
        self.sizes: dict[yaml.Node, tuple[int, int]] = {}  # node -> (nodes, levels) expanded
        self.paths: dict[yaml.Node, Path] = {}  # node -> its first path, for errors

    def refuse(self, message: str, mark: Any) -> ScenarioError:  # a yaml Mark, or None
        return ScenarioError(message, file=self.file, line=mark.line + 1 if mark else None)

    def next_event(self) -> Any:
        return self.peek_event()  # type: ignore[no-untyped-call]  # untyped in the stubs

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            self.count_alias(self.next_event())
            return super().compose_node(parent, index)
        mark = self.next_event().start_mark
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.refuse(f"nested deeper than {MAX_DEPTH} levels; flatten this part of "
                              "the document", mark)
        before = self.nodes
        self.count(1, mark)
        node = super().compose_node(parent, index)
        self.depth -= 1
        if node is not None:
            self.sizes[node] = (self.nodes - before, 1 + max(
                (self.sizes[child][1] for child in _children(node)), default=0))
        return node

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        """PyYAML's, with the ``ValueError`` a resolved scalar's constructor raises (a date
        that does not exist, ``2001-13-45``; an integer past Python's 4,300 digits) refused at
        the scalar's line instead of escaping as a bare exception."""
        try:
            return super().construct_object(node, deep)
        except ScenarioError:
            raise
        except (ValueError, OverflowError) as error:
            kind = node.tag.rsplit(":", 1)[-1]
            value = str(node.value)
            shown = value if len(value) <= 40 else value[:40] + "..."
            reason = str(error).split(";")[0]
            path = self.paths.get(node, ())
            raise ScenarioError(f"YAML cannot read {shown!r} as {_KINDS.get(kind, kind)} "
                                f"({reason}); put it in quotes to keep it as text",
                                file=self.file, line=node.start_mark.line + 1,
                                key=path_text(path) if path else "") from None

    def construct_undefined(self, node: yaml.Node) -> Any:
        """A tag with no constructor (the safe loader's: none for ``!!python/...``): refused
        as not allowed, at its line and key, not as a syntax error."""
        path = self.paths.get(node, ())
        raise TagNotAllowed(node.tag, file=self.file, line=node.start_mark.line + 1,
                            key=path_text(path) if path else "")

    def count(self, nodes: int, mark: Any) -> None:
        self.nodes += nodes
        if self.nodes > MAX_NODES:
            raise self.refuse(f"the document grows past {MAX_NODES} nodes here (aliases "
                              "count every time they are used); write it without so many "
                              "nested aliases", mark)

    def count_alias(self, event: Any) -> None:
        node = self.anchors.get(event.anchor)
        if node is None:
            return  # yaml reports the undefined alias
        mark = event.start_mark
        if node not in self.sizes:
            raise self.refuse(f"the alias *{event.anchor} is used inside its "
                              "own anchor; a scenario cannot refer to itself", mark)
        self.aliases += 1
        if self.aliases > MAX_ALIASES:
            raise self.refuse(f"more than {MAX_ALIASES} aliases; repeat less, or write the "
                              "parts out", mark)
        nodes, levels = self.sizes[node]
        if self.depth + levels > MAX_DEPTH:
            raise self.refuse(f"this alias nests the document deeper than {MAX_DEPTH} levels; "
                              "flatten the aliased part", mark)
        self.count(nodes, mark)


_BoundedLoader.add_constructor(None, _BoundedLoader.construct_undefined)


class _Untagged(_BoundedLoader):
    """The bounded loader reading a value under a tag it does not know as the plain value."""

    def construct_undefined(self, node: yaml.Node) -> Any:
        if isinstance(node, yaml.MappingNode):
            return self.construct_mapping(node, deep=True)
        if isinstance(node, yaml.SequenceNode):
            return self.construct_sequence(node, deep=True)
        return self.construct_scalar(node)  # type: ignore[arg-type]


_Untagged.add_constructor(None, _Untagged.construct_undefined)


def untagged_document(text: str, file: str | None = None) -> Any:
    """A YAML document through the bounded loader with each tag it does not know left out (a
    look at a file's shape: vcrpy writes ``!!python/tuple``); errors as ``load_yaml``'s."""
    return load_yaml(text, file, _Untagged)[0]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _syntax_error(error: yaml.MarkedYAMLError, file: str | None) -> ScenarioError:
    mark = error.problem_mark or error.context_mark
    problem = error.problem or "invalid YAML"
    hint = ""
    if "mapping values are not allowed" in problem or "expected <block end>" in problem:
        hint = " (check the indentation of this line and the one before it)"
    return ScenarioError(f"YAML syntax error: {problem}{hint}", file=file,
                         line=mark.line + 1 if mark else None)


def load_yaml(text: str, file: str | None = None,
              reader: type[_BoundedLoader] = _BoundedLoader) -> tuple[Any, Lines]:
    """Parse one YAML document with the bounded safe loader; errors name file and line."""
    try:
        loader = reader(text, file)
    except yaml.reader.ReaderError as error:  # a character YAML does not allow
        line = text.count("\n", 0, error.position) + 1
        char = chr(error.character) if isinstance(error.character, int) else error.character
        raise ScenarioError(f"character {char!r} is not allowed in YAML; take it out "
                            "or write it as an escape in a double-quoted string", file=file,
                            line=line) from None
    try:
        node = loader.get_single_node()
        if node is None:
            return None, Lines(file)
        lines: dict[Path, int] = {}
        _walk(node, (), lines, file, loader.paths)
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as error:
        raise _syntax_error(error, file) from None
    except yaml.YAMLError as error:
        raise ScenarioError(f"YAML error: {error}", file=file) from None
    finally:
        loader.dispose()
    return data, Lines(file, lines)


def lines_of(text: str, file: str | None = None) -> Lines:
    """Where each path of a YAML text stands, composed by the bounded loader but never built
    (so a tag it would refuse, such as vcrpy's ``!!python/tuple``, does not matter)."""
    try:
        loader = _BoundedLoader(text, file)
        try:
            node = loader.get_single_node()
            lines: dict[Path, int] = {}
            if node is not None:
                _walk(node, (), lines, file, loader.paths)
        finally:
            loader.dispose()
    except (yaml.YAMLError, ScenarioError):
        return Lines(file)  # the reader of the document says what is wrong with it
    return Lines(file, lines)


def safe_document(text: str, file: str | None = None) -> Any:
    """A YAML document (an admin body, say) through the same bounded loader, without lines."""
    return load_yaml(text, file)[0]


def bound_data(data: Any, file: str | None = None) -> None:
    """Refuse parsed data (a mapping given to ``load_scenario``, a JSON body) nested deeper
    than ``MAX_DEPTH`` or larger than ``MAX_NODES``; walks without recursion."""
    stack: list[tuple[Any, Path]] = [(data, ())]
    nodes = 1
    while stack:
        value, path = stack.pop()
        if not isinstance(value, (dict, list, tuple)):
            continue
        if len(path) >= MAX_DEPTH:
            raise ScenarioError(f"nested deeper than {MAX_DEPTH} levels; flatten this part",
                                file=file, key=path_text(path))
        nodes += len(value)  # counted before any is pushed: a huge list is refused unwalked
        if nodes > MAX_NODES:
            raise ScenarioError(f"more than {MAX_NODES} keys, values and items; make the "
                                "scenario smaller", file=file, key=path_text(path))
        pairs = value.items() if isinstance(value, dict) else enumerate(value)
        stack.extend((v, (*path, k if isinstance(k, int) else str(k))) for k, v in pairs)


def read_text(file: str | FilePath) -> str:
    """A scenario file's text; a file that is unreadable, no regular file (a folder, a device
    such as ``/dev/zero``, a pipe: read whole, it would never end), larger than
    ``MAX_FILE_BYTES`` or not UTF-8 is a ``ScenarioError``."""
    name = str(file)
    try:
        found = os.stat(file)  # before opening: a pipe's open waits for a writer
        if not stat.S_ISREG(found.st_mode):
            raise ScenarioError("cannot read the scenario file (not a regular file: a folder, "
                                "a device or a pipe); give a YAML file", file=name)
        if found.st_size > MAX_FILE_BYTES:
            raise ScenarioError(f"cannot read the scenario file (larger than "
                                f"{MAX_FILE_BYTES >> 20} MiB); split it into smaller files",
                                file=name)
        raw = FilePath(file).read_bytes()
    except OSError as error:
        raise ScenarioError(f"cannot read the scenario file ({error.strerror})",
                            file=name) from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ScenarioError(f"not UTF-8 text: byte 0x{raw[error.start]:02x} at offset "
                            f"{error.start}; save the file as UTF-8", file=name,
                            line=raw.count(b"\n", 0, error.start) + 1) from None
