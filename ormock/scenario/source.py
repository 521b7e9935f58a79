"""Reading scenario YAML safely, remembering where every key and value stood.

Only ``yaml.SafeLoader`` is used. ``load_yaml`` returns the data and a ``Lines`` map from a path
(``("steps", 0, "reply")``) to its 1-based line, so every later error can name file, line and key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

__all__ = ["Lines", "ScenarioError", "load_yaml", "path_text"]

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


def _walk(node: yaml.Node, path: Path, lines: dict[Path, int], file: str | None) -> None:
    lines.setdefault(path, node.start_mark.line + 1)
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
            _walk(value, where, lines, file)
    elif isinstance(node, yaml.SequenceNode):
        for index, value in enumerate(node.value):
            _walk(value, (*path, index), lines, file)


def load_yaml(text: str, file: str | None = None) -> tuple[Any, Lines]:
    """Parse one YAML document with the safe loader; syntax errors name file and line."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, Lines(file)
        lines: dict[Path, int] = {}
        _walk(node, (), lines, file)
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        problem = error.problem or "invalid YAML"
        hint = ""
        if "mapping values are not allowed" in problem or "expected <block end>" in problem:
            hint = " (check the indentation of this line and the one before it)"
        raise ScenarioError(
            f"YAML syntax error: {problem}{hint}",
            file=file,
            line=mark.line + 1 if mark else None,
        ) from None
    except yaml.YAMLError as error:
        raise ScenarioError(f"YAML error: {error}", file=file) from None
    finally:
        loader.dispose()
    return data, Lines(file, lines)
