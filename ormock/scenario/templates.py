"""Text templates in scenario strings: ``{{ faker.sentence() }}``, ``{{ request.model }}``.

A deliberately small language, compiled at load time so mistakes are found early: an expression
is ``faker.<provider>`` with optional literal arguments, or ``request.<field>`` (and
``request.extensions.<key>...``, the extension fields in effect). Nothing is evaluated with
``eval``. Each reply draws from its own seed (``generated_text.Draws``: the lorem providers from
Faker's word list by SHAKE-128, any other from Faker seeded when first called), so the same
scenario seed gives the same bytes. A template is compiled once into one function of the reply's
draws and request (``Template.render``): its literal text joined around its calls, and a lorem
call bound to ``Lorem``'s own method with its arguments in that method's order.

Only the providers of ``ALLOWED_PROVIDERS`` may be called, and their arguments are bounded
(numbers, string lengths, list items), as is the text Faker draws for one template.
"""

from __future__ import annotations

import ast
import inspect
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from faker import Faker

from ormock.protocol.text_cuts import plain, tokens
from ormock.scenario.generated_text import FAKER_LOCK, LOREM_PROVIDERS, Draws, Lorem, shared_faker

__all__ = ["ALLOWED_PROVIDERS", "Template", "TemplateError", "compile_template", "has_template"]

_EXPR = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
REQUEST_FIELDS = ("model", "input", "instructions", "previous_response_id", "tool_outputs",
                  "extensions")
# The Faker providers a template may call: each gives the same text for the same seed, and none
# expands a format string from its arguments (pystr_format, json, pylist and the like can call
# any method of Faker, seed_instance too). docs/scenarios.md lists them.
ALLOWED_PROVIDERS = frozenset({
    "word", "words", "sentence", "sentences", "paragraph", "paragraphs", "text",
    "name", "first_name", "last_name", "prefix", "suffix", "user_name",
    "address", "street_address", "street_name", "city", "state", "postcode", "country",
    "country_code", "latitude", "longitude",
    "company", "company_suffix", "catch_phrase", "bs", "job",
    "email", "safe_email", "free_email", "domain_name", "hostname", "url", "uri", "slug", "ipv4",
    "ipv6", "mac_address", "phone_number",
    "uuid4", "md5", "sha1", "sha256",
    "random_int", "random_digit", "random_number", "pyint", "pyfloat", "pydecimal", "boolean",
    "pybool",
    "pystr", "random_letter", "random_letters", "lexify", "numerify", "bothify", "hexify",
    "password", "random_element", "random_elements",
    "date", "date_time", "iso8601", "time", "unix_time",
    "color_name", "hex_color",
})
MAX_NUMBER = 10_000  # counts and lengths: nb, nb_words, max_nb_chars, length, digits, ...
MAX_VALUE = 10**12  # the range arguments below, and the *_datetime timestamps
_VALUE_ARGUMENTS = frozenset({"min", "max", "step", "min_value", "max_value", "end_datetime",
                              "start_datetime"})
MAX_STRING = 1_000  # characters in one string argument
MAX_ITEMS = 1_000  # items in the lists (and mappings) of one argument
MAX_RENDERED = 1_000_000  # characters Faker draws for one template
END_OF_DATES = 1_735_689_600  # 2025-01-01T00:00:00Z: dates are drawn up to it, not up to today


class TemplateError(ValueError):
    path: tuple[str | int, ...] = ()  # where in the reply the template stands


def has_template(text: str) -> bool:
    return "{{" in text


Render = Callable[[Draws, Mapping[str, Any]], str]
# a template's text for one reply and its cut (``TextPart.cut``: its words and its tokens), or
# None when not cut
Cut = tuple[list[str], int] | None
CutRender = Callable[[Draws, Mapping[str, Any]], tuple[str, Cut]]


class _FakerCall:
    """One ``faker.<provider>(...)``, its arguments checked; ``drawn`` is a trial's length."""

    def __init__(self, name: str, bound: inspect.BoundArguments) -> None:
        self.name = name
        self.args = bound.args
        self.kwargs = bound.kwargs
        self.drawn = 0
        # a lorem provider asked only what ``Lorem`` takes is drawn from it, not from Faker:
        # its method, and the arguments in its order, bound once for every render
        self.lorem = name in LOREM_PROVIDERS and set(bound.arguments) <= LOREM_PROVIDERS[name]
        self.method: Callable[..., Any] | None = None
        self.positional: tuple[Any, ...] = ()
        if self.lorem:
            self.method = getattr(Lorem, name)
            self.positional = inspect.signature(self.method).bind(
                None, **bound.arguments).args[1:]

    def __call__(self, draws: Draws, request: Mapping[str, Any]) -> str:
        if self.method is not None:
            text = self.method(draws, *self.positional)
        else:
            text = getattr(draws.faker, self.name)(*self.args, **self.kwargs)
        return text if type(text) is str else str(text)


def _too_long(drawn: int) -> TemplateError:
    return TemplateError(f"this template draws {drawn} characters from faker, more than "
                         f"{MAX_RENDERED}; ask for less text")


def _runner(pieces: tuple[str | Render, ...]) -> Render:
    """The pieces of a template as one function: the text of its calls between its literal
    text, the characters Faker draws counted (at most ``MAX_RENDERED``)."""
    calls = tuple((at, piece, isinstance(piece, _FakerCall)) for at, piece in enumerate(pieces)
                  if not isinstance(piece, str))
    if len(calls) == 1:  # the usual one: a call with text around it
        at, call, counted = calls[0]
        before, after = "".join(pieces[:at]), "".join(pieces[at + 1:])  # type: ignore[arg-type]

        def one(draws: Draws, request: Mapping[str, Any]) -> str:
            text = call(draws, request)
            if counted and len(text) > MAX_RENDERED:
                raise _too_long(len(text))
            return before + text + after

        return one

    def many(draws: Draws, request: Mapping[str, Any]) -> str:
        out: list[Any] = list(pieces)  # the literal text in place, each call's put in
        drawn = 0
        for at, call, counted in calls:
            text = out[at] = call(draws, request)
            if counted:
                drawn += len(text)
                if drawn > MAX_RENDERED:
                    raise _too_long(drawn)
        return "".join(out)

    return many


def _cutter(pieces: tuple[str | Render, ...]) -> CutRender | None:
    """A template of one lorem ``sentence`` between plain words (``Hello! {{ faker.sentence()
    }}``) as a function of its text and its cut: the literal words' tokens counted once
    (``text_cuts.tokens``), the sentence's its words and one more (``Lorem.cut_sentence``), so
    a compiled reply need not split and count the text again. None: any other template."""
    calls = [at for at, piece in enumerate(pieces) if not isinstance(piece, str)]
    if len(calls) != 1:
        return None
    at = calls[0]
    call = pieces[at]
    before, after = "".join(pieces[:at]), "".join(pieces[at + 1:])  # type: ignore[arg-type]
    if not (isinstance(call, _FakerCall) and call.method is Lorem.sentence
            and (not before or (before[-1:] == " " and plain(before[:-1])))
            and (not after or (after[:1] == " " and plain(after[1:])))):
        return None
    head = before[:-1].split(" ") if before else []
    tail = after[1:].split(" ") if after else []
    # the literal words' tokens: the first ones' as a text's start, the last ones' after a space
    fixed = (tokens(head) if head else 0) + (tokens(["a", *tail]) - 1 if tail else 0)
    sentence = Lorem.cut_sentence
    # its arguments, the defaults filled in: passed as they are, not unpacked from a tuple
    bound = inspect.signature(sentence).bind(None, *call.positional)
    bound.apply_defaults()
    _, nb_words, variable = bound.args

    def cut(draws: Draws, request: Mapping[str, Any]) -> tuple[str, Cut]:
        text, words = sentence(draws, nb_words, variable)
        if len(text) > MAX_RENDERED:
            raise _too_long(len(text))
        if words is None:
            return before + text + after, None
        return before + text + after, ([*head, *words, *tail], fixed + len(words) + 1)

    return cut


def _uncut(run: Render) -> CutRender:
    """A template's text for one reply, with no cut (None): any template ``_cutter`` does not
    cut."""

    def uncut(draws: Draws, request: Mapping[str, Any]) -> tuple[str, Cut]:
        return run(draws, request), None

    return uncut


@dataclass(frozen=True)
class Template:
    source: str
    pieces: tuple[str | Render, ...]
    _run: Render = field(init=False, repr=False, compare=False)
    # the text for one reply, and its cut when the template knows it (``_cutter``; else None):
    # a function of the reply's draws and request, compiled once
    render_cut: CutRender = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        run = _runner(self.pieces)  # compiled once
        object.__setattr__(self, "_run", run)
        object.__setattr__(self, "render_cut", _cutter(self.pieces) or _uncut(run))

    @property
    def reads_request(self) -> bool:
        """Whether it reads the request (``request.<field>``): a piece neither text nor a
        Faker call."""
        return any(not isinstance(piece, (str, _FakerCall)) for piece in self.pieces)

    def render(self, draws: Draws | Faker, request: Mapping[str, Any]) -> str:
        """The text for one reply; ``draws``: what it draws from (a Faker seeded already is
        taken as the seed of its ``Draws``)."""
        if not isinstance(draws, Draws):
            draws = Draws(draws)
        return self._run(draws, request)


def _literal(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise TemplateError("arguments must be literals (numbers, strings, lists)") from None


def _check_number(call: str, argument: str, value: complex) -> None:
    limit = MAX_VALUE if argument in _VALUE_ARGUMENTS else MAX_NUMBER
    if abs(value) > limit:
        raise TemplateError(f"{call}: {argument} is {value}, more than {limit}; use a smaller "
                            "number")


def _check_argument(call: str, argument: str, value: Any) -> None:
    """Bound one argument: its numbers, the length of its strings, the items of its lists."""
    if argument.endswith("_datetime") and type(value) is not int:
        raise TemplateError(f"{call}: give {argument} as a Unix timestamp (a number), so the "
                            "text is the same on every day")
    items = 0
    stack = [value]
    while stack:
        value = stack.pop()
        if isinstance(value, (int, float, complex)) and not isinstance(value, bool):
            _check_number(call, argument, value)
        elif isinstance(value, (str, bytes)) and len(value) > MAX_STRING:
            raise TemplateError(f"{call}: {argument} is {len(value)} characters long, more "
                                f"than {MAX_STRING}")
        elif isinstance(value, (list, tuple, set, frozenset, dict)):
            items += len(value)
            if items > MAX_ITEMS:
                raise TemplateError(f"{call}: {argument} has more than {MAX_ITEMS} items")
            stack.extend([*value.keys(), *value.values()] if isinstance(value, dict) else value)


def _faker_call(name: str, args: list[Any], kwargs: dict[str, Any]) -> _FakerCall:
    if name not in ALLOWED_PROVIDERS:
        try:
            known = not name.startswith("_") and callable(getattr(shared_faker(), name, None))
        except Exception:  # Faker's proxy raises for some names (seed)
            known = False
        if not known:
            raise TemplateError(f"faker has no provider {name!r} (try sentence, word, name, "
                                "city)")
        raise TemplateError(f"faker has no provider {name!r} that templates may call (it is "
                            "not deterministic, or runs other providers); use one of "
                            + ", ".join(sorted(ALLOWED_PROVIDERS)))
    call = f"faker.{name}(...)"
    signature = inspect.signature(getattr(shared_faker(), name))
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as error:
        raise TemplateError(f"{call} fails: {error}") from None
    if "end_datetime" in signature.parameters:
        bound.arguments.setdefault("end_datetime", END_OF_DATES)
    for argument, value in bound.arguments.items():
        _check_argument(call, argument, value)
    return _FakerCall(name, bound)


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
    keys: list[str] = []  # request.extensions.<key>.<key>...: the keys below the field
    while not called and isinstance(tree, ast.Attribute) and isinstance(tree.value,
                                                                        ast.Attribute):
        keys.insert(0, tree.attr)
        tree = tree.value
    if not (isinstance(tree, ast.Attribute) and isinstance(tree.value, ast.Name)):
        raise TemplateError(
            f"{{{{{text}}}}}: use faker.<provider>(...) or request.<field>"
        )
    owner, name = tree.value.id, tree.attr
    if owner == "request" and name == "extensions" and not called:
        return _extension(tuple(keys))
    if keys:
        raise TemplateError(f"{{{{{text}}}}}: only request.extensions has keys below it "
                            "(request.extensions.x_name.key)")
    if owner == "request":
        if called or name not in REQUEST_FIELDS:
            raise TemplateError(f"request.{name} is not available; use one of "
                                + ", ".join(f"request.{f}" for f in REQUEST_FIELDS))
        return lambda draws, request: str(request.get(name) or "")
    if owner != "faker":
        raise TemplateError(f"unknown name {owner!r}: templates know 'faker' and 'request'")
    render = _faker_call(name, call_args, call_kwargs)
    try:  # arguments that fail are found now, not on the first request
        with FAKER_LOCK:
            render.drawn = len(render(Draws(shared_faker(), 0), {}))
    except Exception as error:
        raise TemplateError(f"faker.{name}(...) fails: {error}") from None
    return render


def _extension(keys: tuple[str, ...]) -> Render:
    """``request.extensions.<key>...``: the value at those keys of the extension fields in
    effect (inherited along the chain); a string as it is, nothing there as "", any other value
    as compact JSON."""

    def render(draws: Draws, request: Mapping[str, Any]) -> str:
        value: Any = request.get("extensions") or {}
        for key in keys:
            value = value.get(key) if isinstance(value, Mapping) else None
        if value is None or isinstance(value, str):
            return value or ""
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)

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
    drawn = sum(p.drawn for p in pieces if isinstance(p, _FakerCall))
    if drawn > MAX_RENDERED:
        raise _too_long(drawn)
    return Template(text, tuple(pieces))
