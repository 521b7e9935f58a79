"""Text templates in scenario strings: ``{{ faker.sentence() }}``, ``{{ request.model }}``.

A deliberately small language, compiled at load time so mistakes are found early: an expression
is ``faker.<provider>`` with optional literal arguments, or ``request.<field>``. Nothing is
evaluated with ``eval``. Faker is seeded per reply, so the same scenario seed gives the same bytes.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from faker import Faker

from ormock.fakes import FAKER_LOCK, shared_faker

__all__ = ["Template", "TemplateError", "compile_template", "has_template"]

_EXPR = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
REQUEST_FIELDS = ("model", "input", "instructions", "previous_response_id", "tool_outputs")
# methods of Faker itself, not providers: a template must not reseed or reconfigure it
_NOT_PROVIDERS = frozenset({
    "seed", "seed_instance", "seed_locale", "add_provider", "get_providers", "provider",
    "set_formatter", "get_formatter", "set_arguments", "get_arguments", "del_arguments",
    "format", "parse",
})


class TemplateError(ValueError):
    path: tuple[str | int, ...] = ()  # where in the reply the template stands


def has_template(text: str) -> bool:
    return "{{" in text


Render = Callable[[Faker, Mapping[str, Any]], str]


@dataclass(frozen=True)
class Template:
    source: str
    pieces: tuple[str | Render, ...]

    def render(self, faker: Faker, request: Mapping[str, Any]) -> str:
        return "".join(p if isinstance(p, str) else p(faker, request) for p in self.pieces)


def _literal(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise TemplateError("arguments must be literals (numbers, strings, lists)") from None


def _compile_expr(text: str) -> Render:
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        raise TemplateError(f"{{{{{text}}}}} is not an expression ormock understands") from None
    call_args: list[Any] = []
    call_kwargs: dict[str, Any] = {}
    called = isinstance(tree, ast.Call)
    if isinstance(tree, ast.Call):
        call_args = [_literal(a) for a in tree.args]
        call_kwargs = {str(k.arg): _literal(k.value) for k in tree.keywords}
        tree = tree.func
    if not (isinstance(tree, ast.Attribute) and isinstance(tree.value, ast.Name)):
        raise TemplateError(
            f"{{{{{text}}}}}: use faker.<provider>(...) or request.<field>"
        )
    owner, name = tree.value.id, tree.attr
    if owner == "request":
        if called or name not in REQUEST_FIELDS:
            raise TemplateError(f"request.{name} is not available; use one of "
                                + ", ".join(f"request.{f}" for f in REQUEST_FIELDS))
        return lambda faker, request: str(request.get(name) or "")
    if owner != "faker":
        raise TemplateError(f"unknown name {owner!r}: templates know 'faker' and 'request'")
    try:
        provider = None if name.startswith("_") or name in _NOT_PROVIDERS else getattr(
            shared_faker(), name, None)
    except Exception:  # Faker's proxy raises for some names (seed)
        provider = None
    if not callable(provider):
        raise TemplateError(f"faker has no provider {name!r} (try sentence, word, name, city)")

    def render(faker: Faker, request: Mapping[str, Any]) -> str:
        return str(getattr(faker, name)(*call_args, **call_kwargs))

    try:  # arguments that fail are found now, not on the first request
        with FAKER_LOCK:
            render(shared_faker(), {})
    except Exception as error:
        raise TemplateError(f"faker.{name}(...) fails: {error}") from None
    return render


def compile_template(text: str) -> Template:
    pieces: list[str | Render] = []
    position = 0
    for match in _EXPR.finditer(text):
        if match.start() > position:
            pieces.append(text[position : match.start()])
        pieces.append(_compile_expr(match.group(1)))
        position = match.end()
    rest = text[position:]
    if "{{" in rest or "}}" in rest:
        raise TemplateError("unbalanced '{{' or '}}' in a template")
    if rest:
        pieces.append(rest)
    return Template(text, tuple(pieces))
