"""Templates in scenario text: ``{{ faker.x() }}`` and ``{{ request.field }}``, compiled at load
time, rendered with a seeded Faker so the same seed and requests give the same bytes."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from faker import Faker

from ormock import Engine, OrmockServer, Reply
from ormock.scenario import ScenarioError, load_scenario, templates
from ormock.scenario.generated_text import Draws, Lorem, Prose
from ormock.scenario.replies import compile_reply
from ormock.scenario.templates import TemplateError, compile_template, has_template

Json = dict[str, Any]


def namespace_of(base_url: str) -> str:
    return base_url.rsplit("/v1", 1)[0].rsplit("/", 1)[1]


def _render(text: str, request: Json | None = None, seed: int = 1) -> str:
    faker = Faker()
    faker.seed_instance(seed)
    return compile_template(text).render(faker, request or {})


def test_plain_text_is_not_a_template() -> None:
    assert not has_template("no braces here")
    assert has_template("a {{ faker.word() }}")
    assert compile_template("just text").pieces == ("just text",)


def test_faker_providers_with_literal_arguments() -> None:
    words = _render("{{ faker.sentence(nb_words=5, variable_nb_words=False) }}")
    assert len(words.split()) == 5 and words.endswith(".")
    assert _render("[{{ faker.random_int(min=3, max=3) }}]") == "[3]"
    assert _render("{{ faker.random_element(elements=['a']) }}") == "a"
    assert _render("{{faker.name}}")  # no parentheses, no spaces: still a call
    assert _render("{{ faker.word() }} {{ faker.word() }}") != _render("{{ faker.word() }}")


def test_request_fields() -> None:
    request = {"model": "gpt-5", "input": "Hi", "instructions": None,
               "previous_response_id": "resp_1", "tool_outputs": "18C 09:00"}
    text = ("{{ request.model }}|{{ request.input }}|{{ request.instructions }}|"
            "{{ request.previous_response_id }}|{{ request.tool_outputs }}")
    assert _render(text, request) == "gpt-5|Hi||resp_1|18C 09:00"


def test_a_steps_request_fields_are_the_requests_and_made_only_when_read(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the engine (``building.RequestFields``): every field a template may read, from
    the request answered; a step whose templates read none of them never makes them."""
    from ormock.engine.turn import _FIELDS, RequestFields

    assert tuple(_FIELDS) == templates.REQUEST_FIELDS
    engine = Engine(seed=1)
    engine.use({"name": "echo", "steps": [{"reply": {"items": [{"message": (
        "{{ request.model }}|{{ request.input }}|{{ request.instructions }}|"
        "{{ request.previous_response_id }}|{{ request.tool_outputs }}|"
        "{{ request.extensions.x_a.b }}")}]}, "times": "forever"}]})
    first = engine.respond({"model": "m1", "input": "Hi there", "instructions": "be brief",
                            "x_a": {"b": 2}}, {})
    assert isinstance(first, Reply)
    assert first.response["output"][0]["content"][0]["text"] == "m1|Hi there|be brief|||2"
    second = engine.respond({"model": "m1", "input": [
        {"type": "function_call_output", "call_id": "c1", "output": "18C"}]}, {})
    assert isinstance(second, Reply)
    assert second.response["output"][0]["content"][0]["text"] == "m1||||18C|"
    third = engine.respond({"model": "m1", "previous_response_id": first.response["id"],
                            "input": "again"}, {})
    assert isinstance(third, Reply)
    assert third.response["output"][0]["content"][0]["text"] == \
        f"m1|again||{first.response['id']}||2"  # the extensions in effect: the chain's

    read: list[str] = []
    views: list[object] = []

    class Watched(RequestFields):
        def __init__(self, turn: Any) -> None:
            super().__init__(turn)
            views.append(self)

        def __getitem__(self, name: str) -> object:
            read.append(name)
            return super().__getitem__(name)

    monkeypatch.setattr("ormock.engine.building.RequestFields", Watched)
    engine = Engine(seed=1)
    engine.use({"name": "plain", "steps": [{"reply": {"items": [
        {"message": "Hello! {{ faker.sentence(nb_words=8) }}"}]}, "times": "forever"}]})
    engine.respond({"model": "m", "input": "hi"}, {})
    assert views == [] and read == []  # a step whose templates read none is offered none
    engine = Engine(seed=1)
    engine.use({"name": "reads", "steps": [{"reply": {"items": [
        {"message": "{{ faker.word() }} {{ request.model }}"}]}, "times": "forever"}]})
    engine.respond({"model": "m", "input": "hi"}, {})
    assert len(views) == 1 and read == ["model"]  # made for it, read once


def test_a_reply_knows_whether_its_templates_read_the_request() -> None:
    def reads(items: list[object]) -> bool:
        return compile_reply({"items": items}).reads_request

    assert not reads([{"message": "Hello! {{ faker.sentence() }}"}, {"message": "plain"}])
    assert reads([{"message": "{{ request.input }}"}])
    assert reads([{"function_call": {"name": "f", "arguments": {
        "q": "{{ request.extensions.x_a.b }}"}}}])
    assert reads([{"message": {"text": "{{ faker.word() }}", "parts": [
        {"refusal": "no {{ request.model }}"}]}}])


def test_a_reply_without_templates_draws_nothing_and_cuts_its_texts_once() -> None:
    """A reply whose items hold no template is given nothing to draw from (``templated``:
    no seed is derived for it), and the message it makes once for every request comes with
    its plain texts cut (``TextPart.cut``: words and tokens), as a compiled reply cuts them."""
    from ormock.protocol.tokens import count_tokens

    assert compile_reply({"items": [{"message": "Hello! {{ faker.sentence() }}"}]}).templated
    assert compile_reply({"items": [{"message": "plain"}, {"function_call": {
        "name": "f", "arguments": {"q": "{{ faker.word() }}"}}}]}).templated
    fixed = compile_reply({"items": [{"message": {"parts": [
        {"text": "A fixed reply, word for word."}, {"text": 'Not "plain".'},
        {"refusal": "No."}]}}]})
    assert not fixed.templated
    first, again = fixed.plan(None, {}), fixed.plan(None, {})
    assert again.items[0] is first.items[0]  # made once
    parts = first.items[0].parts  # type: ignore[union-attr]
    text = "A fixed reply, word for word."
    assert parts[0].cut == (text.split(" "), count_tokens(text))  # type: ignore[union-attr]
    assert parts[1].cut is None and parts[1].text == 'Not "plain".'  # type: ignore[union-attr]
    assert parts[2].refusal == "No."  # type: ignore[union-attr]


def test_a_reply_whose_items_are_all_made_once_shares_its_plan() -> None:
    """A reply every item of which is made once answers every request with one plan; a
    templated one, or one with an item made anew each time (annotations), makes a plan each
    time."""
    fixed = compile_reply({"items": [{"message": "Hello."}, {"function_call": {
        "name": "f", "arguments": {"q": 1}}}], "status": "incomplete",
        "incomplete_reason": "max_output_tokens"})
    first = fixed.plan(None, {})
    assert fixed.plan(None, {}) is first
    assert (first.status, first.incomplete_reason, len(first.items)) == \
        ("incomplete", "max_output_tokens", 2)
    templated = compile_reply({"items": [{"message": "Hello."},
                                         {"message": "{{ faker.word() }}"}]})
    draws = Draws(Faker(), 3)
    assert templated.plan(draws, {}) is not templated.plan(draws, {})
    cited = compile_reply({"items": [{"message": {"text": "See ormock.", "annotations": [
        {"url": "https://example.com", "cite": "ormock"}]}}]})
    assert cited.plan(None, {}) is not cited.plan(None, {})


@pytest.mark.parametrize(("text", "message"), [
    ("{{ faker.no_such_provider() }}",
     "faker has no provider 'no_such_provider' (try sentence, word, name, city)"),
    ("{{ faker._private() }}", "faker has no provider '_private'"),
    ("{{ faker.seed_instance(3) }}", "faker has no provider 'seed_instance'"),
    ("{{ faker.seed(3) }}", "faker has no provider 'seed'"),
    ("{{ faker.random_int(min=5, max=1) }}", "faker.random_int(...) fails: empty range"),
    ("{{ faker.sentence(nb_words=n) }}", "arguments must be literals (numbers, strings, lists)"),
    ("{{ request.body }}", "request.body is not available; use one of request.model, "
     "request.input, request.instructions, request.previous_response_id, request.tool_outputs, "
     "request.extensions"),
    ("{{ request.model() }}", "request.model is not available"),
    ("{{ os.getcwd() }}", "unknown name 'os': templates know 'faker' and 'request'"),
    ("{{ __import__('os').system('true') }}",
     "{{ __import__('os').system('true') }}: use faker.<provider>(...) or request.<field>"),
    ("{{ faker }}", "{{ faker }}: use faker.<provider>(...) or request.<field>"),
    ("{{ 1 + }}", "{{ 1 + }} is not an expression ormock understands"),
    ("Hello {{ faker.name()", "unbalanced '{{' or '}}' in a template"),
    ("Hello }} there", "unbalanced '{{' or '}}' in a template"),
])
def test_mistakes_are_found_when_compiling(text: str, message: str) -> None:
    with pytest.raises(TemplateError) as caught:
        compile_template(text)
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize(("where", "line", "key"), [
    ("message", 5, "steps[0].reply.items[0].message"),
    ("text", 7, "steps[0].reply.items[1].message.text"),
    ("argument", 11, "steps[0].reply.items[2].function_call.arguments.q"),
    ("vendor", 15, "steps[0].reply.items[3].vendor_item.fields.deep[1]"),
])
def test_a_template_error_names_file_line_and_key(tmp_path: Path, where: str, line: int,
                                                  key: str) -> None:
    good = "{{ faker.word() }}"
    bad = "{{ faker.wrod() }}"
    text = f"""\
name: t
steps:
  - reply:
      items:
        - message: "{bad if where == 'message' else good}"
        - message:
            text: "{bad if where == 'text' else good}"
        - function_call:
            name: f
            arguments:
              q: "{bad if where == 'argument' else good}"
        - vendor_item:
            type: "acme:x"
            fields:
              deep: [ok, "{bad if where == 'vendor' else good}"]
"""
    path = tmp_path / "t.yaml"
    path.write_text(text)
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    assert str(caught.value) == (
        f"{path}:{line}: {key}: template error: faker has no provider 'wrod' (try sentence, "
        "word, name, city)")


TEMPLATED = {
    "name": "templated",
    "seed": 42,
    "steps": [{"times": "forever", "reply": {"items": [
        {"message": "{{ faker.name() }} from {{ faker.city() }}: {{ faker.sentence() }}"},
        {"function_call": {"name": "lookup",
                           "arguments": {"query": "{{ request.input }}", "n": 3,
                                         "word": "{{ faker.word() }}"}}},
    ]}}],
}


def _bytes(scenario: Json, *inputs: str, seed: int = 0) -> list[bytes]:
    fake = Engine(seed=seed)
    fake.use(scenario)
    out = []
    for text in inputs:
        reply = fake.respond({"model": "m", "input": text, "stream": True}, {})
        assert isinstance(reply, Reply)
        out.append(reply.sse_body())
    return out


def _message(body: bytes) -> str:
    for line in body.splitlines():
        if line.startswith(b'data: {"type":"response.output_text.done"'):
            return str(json.loads(line[6:])["text"])
    raise AssertionError("no text")


def test_the_same_seed_and_requests_give_the_same_bytes() -> None:
    first = _bytes(TEMPLATED, "one", "two", "one")
    assert first == _bytes(TEMPLATED, "one", "two", "one")
    one, two, again = (_message(b) for b in first)
    assert one != two  # each request gets its own text
    assert one == again  # a repeated request gets the same content...
    assert first[0] != first[2]  # ...under a new response id


def test_a_different_scenario_seed_gives_different_text() -> None:
    reseeded = {**TEMPLATED, "seed": 43}
    assert _message(_bytes(TEMPLATED, "one")[0]) != _message(_bytes(reseeded, "one")[0])


def test_the_server_seed_changes_ids_not_scenario_text() -> None:
    zero, seven = _bytes(TEMPLATED, "one", seed=0)[0], _bytes(TEMPLATED, "one", seed=7)[0]
    assert zero != seven
    assert _message(zero) == _message(seven)


def test_rendered_arguments_are_json() -> None:
    fake = Engine()
    fake.use(TEMPLATED)
    reply = fake.respond({"model": "m", "input": 'say "hi"\nplease'}, {})
    assert isinstance(reply, Reply)
    call = reply.response["output"][1]
    arguments = json.loads(call["arguments"])
    assert arguments["query"] == 'say "hi"\nplease' and arguments["n"] == 3
    assert arguments["word"].isalpha()


def test_identical_bytes_from_two_fresh_servers(base_url: str, server: OrmockServer) -> None:
    """Two namespaces of the session server and a fresh server: three fresh fakes, seed 0."""
    requests = [{"model": "m", "input": "one", "stream": True},
                {"model": "m", "input": "two"},
                {"model": "m", "input": "one", "stream": True}]

    def run(root: str, engine: Engine) -> list[bytes]:
        engine.use(TEMPLATED)
        with httpx.Client(base_url=root) as raw:
            return [raw.post("/responses", json=r).content for r in requests]

    other = base_url.replace(f"/{namespace_of(base_url)}/", f"/{namespace_of(base_url)}b/")
    first = run(base_url, server.engine(namespace_of(base_url)))
    second = run(other, server.engine(namespace_of(other)))
    with OrmockServer(seed=0) as fresh:
        third = run(fresh.base_url, fresh.engine())
    assert first == second == third
    assert b"Hello" not in first[0] and _message(first[0]) == _message(first[2])


def test_templates_through_the_sdk(server: OrmockServer, base_url: str,
                                   client: openai.OpenAI) -> None:
    docs = (Path(__file__).resolve().parent.parent / "docs" / "scenarios.md").read_text()
    example = docs[docs.index("```yaml\nname: templated\n") + 8:]
    example = example[:example.index("```")]
    server.engine(namespace_of(base_url)).use(load_scenario(example))
    response = client.responses.create(model="gpt-5", input="Where is Paris?")
    message, call = response.output
    assert message.type == "message" and response.output_text.endswith(" says hi to gpt-5.")
    assert call.type == "function_call"
    assert json.loads(call.arguments) == {"query": "Where is Paris?", "limit": 3}
    again = client.responses.create(model="gpt-5", input="Where is Paris?")
    assert again.output_text == response.output_text


@pytest.mark.parametrize("call", [
    r"pystr_format('\x7b\x7bseed_instance\x7d\x7d')", "parse('x')", "format('seed_instance')",
    "pylist(value_types=['seed_instance'])", "json()", "seed_instance(3)",
])
def test_finding8_faker_provider_outside_allow_list_refused(call: str) -> None:
    name = call.split("(")[0]
    with pytest.raises(TemplateError) as caught:
        compile_template(f"{{{{ faker.{call} }}}}")
    message = str(caught.value)
    assert message.startswith(f"faker has no provider {name!r} that templates may call (it is "
                              "not deterministic, or runs other providers); use one of ")
    allowed = message.split("use one of ")[1].split(", ")
    assert allowed == sorted(allowed) and {"sentence", "name", "uuid4"} <= set(allowed)
    assert len(allowed) == len(templates.ALLOWED_PROVIDERS)


def test_finding8_a_refused_provider_is_named_with_file_and_line() -> None:
    text = "name: t\nsteps:\n  - reply:\n      items:\n        - message: \"{{ faker.json() }}\"\n"
    with pytest.raises(ScenarioError, match=r"^<scenario>:5: steps\[0\]\.reply\.items\[0\]\."
                       r"message: template error: faker has no provider 'json' that templates"):
        load_scenario(text)


@pytest.mark.parametrize(("call", "message"), [
    ("pystr(min_chars=100000000)", "faker.pystr(...): min_chars is 100000000, more than 10000; "
     "use a smaller number"),
    ("paragraphs(nb=20000)", "faker.paragraphs(...): nb is 20000, more than 10000"),
    ("password(1000000)", "faker.password(...): length is 1000000, more than 10000"),
    ("random_int(max=10000000000000)", "faker.random_int(...): max is 10000000000000, more "
     "than 1000000000000"),
    (f"bothify(text='{'#' * 1001}')", "faker.bothify(...): text is 1001 characters long, more "
     "than 1000"),
    (f"random_element(elements=[{'0, ' * 1001}])", "faker.random_element(...): elements has "
     "more than 1000 items"),
    ("date(end_datetime='now')", "faker.date(...): give end_datetime as a Unix timestamp (a "
     "number), so the text is the same on every day"),
    ("words(nb=3, nope=1)", "faker.words(...) fails: got an unexpected keyword argument 'nope'"),
])
def test_finding8_huge_faker_arguments_refused(call: str, message: str) -> None:
    with pytest.raises(TemplateError) as caught:
        compile_template(f"{{{{ faker.{call} }}}}")
    assert str(caught.value).startswith(message)


def test_finding8_a_template_draws_at_most_a_million_characters(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    piece = "{{ faker.pystr(min_chars=10000, max_chars=10000) }}"
    with pytest.raises(TemplateError) as caught:
        compile_template(" ".join([piece] * 101))
    assert str(caught.value) == ("this template draws 1010000 characters from faker, more than "
                                 "1000000; ask for less text")
    template = compile_template(" ".join([piece] * 50))  # and when rendering, too
    assert len(template.render(Faker(), {})) == 500_049
    monkeypatch.setattr(templates, "MAX_RENDERED", 400_000)
    with pytest.raises(TemplateError, match=r"^this template draws 410000 characters from faker"):
        template.render(Faker(), {})


def test_finding8_dates_are_the_same_on_every_day() -> None:
    pinned = _render("{{ faker.iso8601(end_datetime=1735689600) }}")
    assert _render("{{ faker.iso8601() }}") == pinned and pinned < "2025-01-01"


def test_finding8_docs_list_the_allowed_providers() -> None:
    docs = (Path(__file__).resolve().parent.parent / "docs" / "scenarios.md").read_text()
    listing = docs[docs.index("The providers a template may call"):docs.index(
        "Arguments are bounded")]
    listing = listing[listing.index("\n- text:"):]
    named = {n for n in re.findall(r"`([a-z0-9_]+)`", listing) if n != "end_datetime"}
    assert named == templates.ALLOWED_PROVIDERS


def test_lorem_providers_draw_from_the_seed_without_seeding_faker() -> None:
    faker = Faker()
    faker.seed_instance(3)
    state = faker.random.getstate()
    text = "{{ faker.sentence(nb_words=8) }} {{ faker.paragraph() }} {{ faker.words(4) }}"
    template = compile_template(text)
    first = template.render(Draws(faker, 11), {})
    assert faker.random.getstate() == state  # Faker was never seeded nor drawn from
    assert template.render(Draws(faker, 11), {}) == first
    assert template.render(Draws(faker, 12), {}) != first
    lorem = Lorem(5)
    assert len(lorem.sentence(nb_words=5, variable_nb_words=False).split()) == 5
    counts = {len(lorem.sentence(nb_words=10).split()) for _ in range(200)}
    assert min(counts) >= 6 and max(counts) <= 14 and len(counts) > 4  # 60% to 140%
    assert lorem.sentence(nb_words=0) == "" and lorem.paragraph(nb_sentences=0) == ""
    assert len(lorem.paragraphs(2)) == 2 and len(lorem.sentences(4)) == 4
    assert lorem.word() in Prose.words()


def test_other_providers_seed_faker_on_first_use_with_the_same_seed() -> None:
    template = compile_template("{{ faker.name() }} says {{ faker.sentence() }}")
    once, again = (template.render(Draws(Faker(), 9), {}) for _ in range(2))
    assert once == again  # the same seed, the same text: Faker seeded by the draws
    faker = Faker()
    faker.seed_instance(9)
    assert once.startswith(faker.name())
    # an argument Lorem does not take leaves the call to Faker
    words = compile_template("{{ faker.words(2, ext_word_list=['a']) }}").render(
        Draws(Faker(), 1), {})
    assert words == "['a', 'a']"


def test_lorem_words_stay_those_of_their_seed() -> None:
    # pinned with the code before the fifth round (the same stream, drawn without Faker)
    lorem = Lorem(7)
    assert lorem.sentence(nb_words=8) == "Individual kitchen owner usually off thing."
    assert lorem.words(1) == ["mission"]
    assert lorem.words(3) == ["tonight", "month", "part"]
    assert lorem.paragraph(2) == ("Beyond Congress anything off course culture reveal. Buy front "
                                  "camera everybody perhaps.")


@pytest.mark.parametrize("text", [
    "Hello! {{ faker.sentence(nb_words=8) }}",
    "{{ faker.sentence() }}",
    "{{ faker.sentence(nb_words=1) }} and then some, ok?",
    "Say: {{ faker.sentence(3, False) }} Done.",
    "{{ faker.sentence(4) }}",  # the other argument's default filled in
    "{{ faker.sentence(variable_nb_words=False) }}",
])
def test_a_sentence_between_plain_words_comes_cut(text: str) -> None:
    """A lorem sentence between plain words renders with its cut (``Template.render_cut``):
    the text it renders, split at its spaces, and the tokenizer's count of it."""
    from ormock.protocol.text_cuts import plain
    from ormock.protocol.tokens import count_tokens

    template = compile_template(text)
    for seed in range(200):
        rendered, cut = template.render_cut(Draws(Faker(), seed), {})
        assert rendered == template.render(Draws(Faker(), seed), {})
        assert cut is not None and plain(rendered)
        assert cut == (rendered.split(" "), count_tokens(rendered))


@pytest.mark.parametrize("text", [
    "{{ faker.paragraph() }}",  # not a sentence
    "  {{ faker.sentence() }}",  # two spaces before it
    "{{ faker.sentence() }} {{ faker.word() }}",  # two calls
    'Say "{{ faker.sentence() }}"',  # quotes around it: not plain
    "{{ faker.sentence(nb_words=0) }}",  # nothing drawn
])
def test_other_templates_come_uncut(text: str) -> None:
    template = compile_template(text)
    rendered, cut = template.render_cut(Draws(Faker(), 3), {})
    assert cut is None and rendered == template.render(Draws(Faker(), 3), {})
