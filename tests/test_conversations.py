"""``/v1/conversations`` and ``conversation`` on ``POST /v1/responses``, through the real openai
SDK (and the Agents SDK's ``OpenAIConversationsSession``) against a real self-checking server,
on the memory store, on an SQLite file and on Redis."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from envelopes import error_of
from stores import BACKENDS, store_spec

from ormock import OrmockServer
from ormock.protocol.tokens import count_tokens

WEATHER_TOOL: dict[str, Any] = {
    "type": "function", "name": "get_weather", "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"], "additionalProperties": False},
}


@pytest.fixture(params=BACKENDS)
def conv_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh namespace's base URL on the memory store (the shared server), or a server of
    its own on an SQLite file or a Redis database."""
    if request.param == "memory":
        yield request.getfixturevalue("base_url")
        return
    with OrmockServer(seed=0, self_check=True,
                      store=store_spec(request.param, request, tmp_path)) as own:
        yield own.base_url


@pytest.fixture
def sdk(conv_url: str) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=conv_url, api_key="sk-test", max_retries=0,
                       _strict_response_validation=True) as client:
        yield client


@pytest.fixture
def raw(conv_url: str) -> Iterator[httpx.Client]:
    # the same API key as the SDK client: a response is visible only to the key that made it
    with httpx.Client(base_url=conv_url, timeout=10,
                      headers={"authorization": "Bearer sk-test"}) as client:
        yield client


def _user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": text}


# -- conversations ----------------------------------------------------------------------------
def test_create_retrieve_update_delete(sdk: openai.OpenAI, raw: httpx.Client) -> None:
    created = sdk.conversations.create(metadata={"topic": "launch"},
                                       items=[_user("We launch on Tuesday.")])
    assert created.id.startswith("conv_") and created.object == "conversation"
    assert created.metadata == {"topic": "launch"} and created.created_at > 0
    assert sdk.conversations.retrieve(created.id) == created
    updated = sdk.conversations.update(created.id, metadata={"topic": "delay", "owner": "ana"})
    assert updated.metadata == {"topic": "delay", "owner": "ana"}
    assert sdk.conversations.retrieve(created.id).metadata == updated.metadata
    [item] = sdk.conversations.items.list(created.id).data
    assert item.type == "message" and item.role == "user" and item.status == "completed"
    assert [(c.type, getattr(c, "text", None)) for c in item.content] == [
        ("input_text", "We launch on Tuesday.")]

    deleted = sdk.conversations.delete(created.id)
    assert (deleted.id, deleted.object, deleted.deleted) == (created.id, "conversation.deleted",
                                                            True)
    with pytest.raises(openai.NotFoundError):
        sdk.conversations.retrieve(created.id)
    error = error_of(raw.get(f"/conversations/{created.id}/items"), 404)
    assert (error["code"], error["param"]) == ("conversation_not_found", "conversation_id")
    assert created.id in error["message"]


def test_an_empty_conversation_lists_no_items(raw: httpx.Client) -> None:
    created = raw.post("/conversations", json={}).json()
    assert created["metadata"] == {}
    page = raw.get(f"/conversations/{created['id']}/items").json()
    assert page == {"object": "list", "data": [], "first_id": None, "last_id": None,
                    "has_more": False}


# -- items ------------------------------------------------------------------------------------
def test_items_create_retrieve_delete(sdk: openai.OpenAI) -> None:
    conversation = sdk.conversations.create()
    added = sdk.conversations.items.create(conversation.id, items=[
        _user("What is the weather in Paris?"),
        {"type": "message", "role": "assistant", "content": "Sunny, 21 degrees."},
        {"type": "function_call", "call_id": "call_1", "name": "get_weather",
         "arguments": '{"city": "Paris"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
    ])
    assert [i.type for i in added.data] == ["message", "message", "function_call",
                                            "function_call_output"]
    assert added.first_id == added.data[0].id and added.last_id == added.data[-1].id
    assert not added.has_more
    ids = [i.id for i in added.data]
    assert ids[0].startswith("msg_") and ids[1].startswith("msg_") and len(set(ids)) == 4
    assistant = sdk.conversations.items.retrieve(ids[1], conversation_id=conversation.id)
    assert assistant == added.data[1]
    assert assistant.type == "message" and assistant.content[0].type == "output_text"

    after = sdk.conversations.items.delete(ids[1], conversation_id=conversation.id)
    assert after.id == conversation.id and after.object == "conversation"
    listed = [i.id for i in sdk.conversations.items.list(conversation.id, order="asc")]
    assert listed == [ids[0], ids[2], ids[3]]
    with pytest.raises(openai.NotFoundError) as caught:
        sdk.conversations.items.retrieve(ids[1], conversation_id=conversation.id)
    body: Any = caught.value.body
    assert (body["code"], body["param"]) == ("item_not_found", "item_id")


def test_items_page_to_the_end_with_auto_pagination(sdk: openai.OpenAI) -> None:
    conversation = sdk.conversations.create(items=[_user(f"line {n}") for n in range(20)])
    for start in (20, 40):
        sdk.conversations.items.create(conversation.id,
                                       items=[_user(f"line {n}") for n in range(start, start + 20)]
                                       [: 45 - start])
    oldest_first = list(sdk.conversations.items.list(conversation.id, order="asc", limit=7))
    assert [i.content[0].text for i in oldest_first] == [f"line {n}" for n in range(45)]

    first = sdk.conversations.items.list(conversation.id, limit=10)  # desc by default
    assert len(first.data) == 10 and first.has_more
    assert first.data[0].content[0].text == "line 44"
    newest_first = list(first)
    assert [i.id for i in newest_first] == [i.id for i in reversed(oldest_first)]
    default = sdk.conversations.items.list(conversation.id)
    assert len(default.data) == 20 and default.has_more  # limit 20 by default
    last = sdk.conversations.items.list(conversation.id, order="asc",
                                        after=oldest_first[39].id, limit=100)
    assert [i.id for i in last.data] == [i.id for i in oldest_first[40:]]
    assert not last.has_more


@pytest.mark.parametrize(("method", "path", "params", "body", "param"), [
    ("GET", "items", {"limit": "0"}, None, "limit"),
    ("GET", "items", {"limit": "101"}, None, "limit"),
    ("GET", "items", {"limit": "ten"}, None, "limit"),
    ("GET", "items", {"order": "newest"}, None, "order"),
    ("GET", "items", {"after": "msg_nope"}, None, "after"),
    ("GET", "items", {"include[]": "message.everything"}, None, "include"),
    ("POST", "items", {}, {"items": [_user("x")] * 21}, "items"),
    ("POST", "items", {}, {"items": [{"type": "message", "role": "boss", "content": "x"}]},
     "items[0].role"),
    ("POST", "items", {}, {}, "items"),
    ("POST", "", {}, {"metadata": {f"k{n}": "v" for n in range(17)}}, "metadata"),
    ("POST", "", {}, {"metadata": {"k": 3}}, "metadata.k"),
    ("POST", "", {}, {}, "metadata"),
])
def test_bad_requests_name_the_field(raw: httpx.Client, method: str, path: str,
                                     params: dict[str, str], body: Any, param: str) -> None:
    conversation = raw.post("/conversations", json={"items": [_user("hello")]}).json()
    url = f"/conversations/{conversation['id']}" + (f"/{path}" if path else "")
    error = error_of(raw.request(method, url, params=params, json=body), 400)
    assert error["param"] == param, error


def test_an_item_id_already_in_the_conversation_is_refused(sdk: openai.OpenAI,
                                                          raw: httpx.Client) -> None:
    conversation = sdk.conversations.create(items=[_user("hello")])
    [item] = sdk.conversations.items.list(conversation.id).data
    again = {"id": item.id, "type": "message", "role": "user", "content": "hi"}
    error = error_of(raw.post(f"/conversations/{conversation.id}/items",
                            json={"items": [again]}), 400)
    assert (error["param"], error["code"]) == ("items[0].id", "duplicate_item")
    assert len(sdk.conversations.items.list(conversation.id).data) == 1


# -- responses in a conversation --------------------------------------------------------------
def test_each_turn_sees_the_earlier_ones_and_is_appended(sdk: openai.OpenAI,
                                                         raw: httpx.Client) -> None:
    conversation = sdk.conversations.create(items=[_user("We launch on Tuesday.")])
    first = sdk.responses.create(model="gpt-4o-mini", input="When do we launch?",
                                 conversation=conversation.id)
    assert first.conversation is not None and first.conversation.id == conversation.id
    second = sdk.responses.create(model="gpt-4o-mini", input="And who is told first?",
                                  conversation={"id": conversation.id})
    assert second.conversation is not None and second.conversation.id == conversation.id

    # turn 1 counts the conversation's item as if it had been sent with its input; turn 2
    # counts turn 1's context, its answer and its own input
    stateless = sdk.responses.create(
        model="gpt-4o-mini", input=[_user("We launch on Tuesday."), _user("When do we launch?")])
    assert first.usage is not None and second.usage is not None and stateless.usage is not None
    assert first.usage.input_tokens == stateless.usage.input_tokens
    assert second.usage.input_tokens == (first.usage.input_tokens + count_tokens(
        first.output_text) + count_tokens("And who is told first?"))

    items = list(sdk.conversations.items.list(conversation.id, order="asc"))
    texts = [(i.role, i.content[0].text) for i in items if i.type == "message"]
    assert texts == [("user", "We launch on Tuesday."), ("user", "When do we launch?"),
                     ("assistant", first.output_text), ("user", "And who is told first?"),
                     ("assistant", second.output_text)]
    assert items[2].id == first.output[0].id and items[4].id == second.output[0].id
    stored = raw.get(f"/responses/{second.id}").json()
    assert stored["conversation"] == {"id": conversation.id}


def test_input_tokens_counts_the_conversation(sdk: openai.OpenAI) -> None:
    conversation = sdk.conversations.create(items=[_user("We launch on Tuesday.")])
    counted = sdk.responses.input_tokens.count(model="gpt-4o-mini", input="When?",
                                               conversation=conversation.id)
    stateless = sdk.responses.input_tokens.count(
        model="gpt-4o-mini", input=[_user("We launch on Tuesday."), _user("When?")])
    assert counted.input_tokens == stateless.input_tokens
    made = sdk.responses.create(model="gpt-4o-mini", input="When?", conversation=conversation.id)
    assert made.usage is not None and made.usage.input_tokens == counted.input_tokens
    assert len(sdk.conversations.items.list(conversation.id).data) == 3  # only create appends
    with pytest.raises(openai.NotFoundError):
        sdk.responses.input_tokens.count(model="gpt-4o-mini", input="x", conversation="conv_x")


def test_a_tool_loop_in_a_conversation_answers_from_the_stored_call(sdk: openai.OpenAI) -> None:
    """Turn 2 sends only the tool's output: the name of the tool it answers comes from the
    function call turn 1 appended to the conversation."""
    conversation = sdk.conversations.create()
    call_turn = sdk.responses.create(model="gpt-4o-mini", input="What is the weather in Paris?",
                                     tools=[WEATHER_TOOL], conversation=conversation.id)
    [call] = [i for i in call_turn.output if i.type == "function_call"]
    answer = sdk.responses.create(
        model="gpt-4o-mini", tools=[WEATHER_TOOL], conversation=conversation.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}],
        stream=True)
    completed = [e for e in answer if e.type == "response.completed"]
    assert completed[0].response.output_text.startswith("Here is what I found: get_weather "
                                                        "returned sunny")
    kinds = [i.type for i in sdk.conversations.items.list(conversation.id, order="asc")]
    assert kinds == ["message", "function_call", "function_call_output", "message"]


@pytest.mark.parametrize("store", BACKENDS)
def test_websocket_turns_in_a_conversation(store: str, tmp_path: Path,
                                           request: pytest.FixtureRequest) -> None:
    """The same body twice on one connection: the second turn sees the first (a reply in a
    conversation never comes from the stream cache, which a server without self-check uses)."""
    spec = store_spec(store, request, tmp_path)
    with OrmockServer(seed=0, store=spec) as server, openai.OpenAI(
            base_url=server.base_url, api_key="sk-test", max_retries=0) as sdk:
        finals = _socket_turns(sdk)
        conversation_id = finals[0].conversation.id
        assert len(sdk.conversations.items.list(conversation_id).data) == 4
    first, second = finals
    assert first.usage is not None and second.usage is not None
    assert second.usage.input_tokens == (first.usage.input_tokens + count_tokens(
        first.output_text) + count_tokens("Count to three."))
    assert second.conversation is not None and second.conversation.id == conversation_id


def _socket_turns(sdk: openai.OpenAI) -> list[Any]:
    conversation = sdk.conversations.create()
    finals = []
    with sdk.responses.connect() as connection:
        for _ in range(2):
            connection.response.create(model="gpt-4o-mini", input="Count to three.",
                                       conversation=conversation.id)
            for event in connection:
                if event.type in ("response.completed", "error"):
                    break
            assert event.type == "response.completed", event
            finals.append(event.response)
    return finals


def test_conversation_errors(sdk: openai.OpenAI, raw: httpx.Client) -> None:
    conversation = sdk.conversations.create()
    first = sdk.responses.create(model="gpt-4o-mini", input="hi")
    both = raw.post("/responses", json={"model": "gpt-4o-mini", "input": "hi",
                                        "conversation": conversation.id,
                                        "previous_response_id": first.id})
    assert error_of(both, 400)["param"] == "conversation"
    missing = raw.post("/responses", json={"model": "gpt-4o-mini", "input": "hi",
                                           "conversation": "conv_nope"})
    error = error_of(missing, 404)
    assert (error["param"], error["code"]) == ("conversation", "conversation_not_found")
    for bad, param in ((3, "conversation"), ({"id": ""}, "conversation.id")):
        wrong = raw.post("/responses", json={"model": "gpt-4o-mini", "input": "hi",
                                             "conversation": bad})
        assert error_of(wrong, 400)["param"] == param
    # nothing was appended by the refused requests
    assert sdk.conversations.items.list(conversation.id).data == []


@pytest.mark.parametrize("store", BACKENDS)
def test_conversations_are_per_namespace(store: str, tmp_path: Path,
                                         request: pytest.FixtureRequest) -> None:
    spec = store_spec(store, request, tmp_path)
    with OrmockServer(seed=0, store=spec) as server, httpx.Client(timeout=10) as http:
        server.namespaces.open("elsewhere")
        created = http.post(f"{server.base_url}/conversations", json={}).json()
        assert http.get(f"{server.base_url}/conversations/{created['id']}").status_code == 200
        other = http.get(f"{server.url}/elsewhere/v1/conversations/{created['id']}")
        assert error_of(other, 404)["code"] == "conversation_not_found"
        # the same seed gives the other namespace the same first id: still its own keyspace
        mine = http.post(f"{server.url}/elsewhere/v1/conversations", json={"metadata": {
            "who": "elsewhere"}}).json()
        assert mine["id"] == created["id"]
        assert http.get(f"{server.base_url}/conversations/{created['id']}").json()[
            "metadata"] == {}


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_a_conversation_survives_a_restart(kind: str, tmp_path: Path,
                                           request: pytest.FixtureRequest) -> None:
    store = store_spec(kind, request, tmp_path)
    with OrmockServer(seed=0, store=store) as first, openai.OpenAI(
            base_url=first.base_url, api_key="sk-test", max_retries=0) as sdk:
        conversation = sdk.conversations.create(items=[_user("Remember the blue door.")])
        sdk.responses.create(model="gpt-4o-mini", input="Which door?",
                             conversation=conversation.id)
    with OrmockServer(seed=0, store=store) as second, openai.OpenAI(
            base_url=second.base_url, api_key="sk-test", max_retries=0) as sdk:
        assert sdk.conversations.retrieve(conversation.id).id == conversation.id
        after = sdk.responses.create(model="gpt-4o-mini", input="Again?",
                                     conversation=conversation.id)
        assert after.conversation is not None
        items = list(sdk.conversations.items.list(conversation.id, order="asc"))
        assert len(items) == 5 and items[0].content[0].text == "Remember the blue door."


def test_the_same_requests_give_the_same_ids(tmp_path: Path) -> None:
    def run() -> list[str]:
        with OrmockServer(seed=7) as server, openai.OpenAI(
                base_url=server.base_url, api_key="sk-test", max_retries=0) as sdk:
            conversation = sdk.conversations.create(items=[_user("hello")])
            response = sdk.responses.create(model="gpt-4o-mini", input="hi",
                                            conversation=conversation.id)
            return [conversation.id, response.id,
                    *[i.id for i in sdk.conversations.items.list(conversation.id)]]

    assert run() == run()


# -- the Agents SDK ---------------------------------------------------------------------------
def _agent(client: openai.AsyncOpenAI) -> Any:
    agents = pytest.importorskip("agents")
    agents.set_tracing_disabled(True)
    return agents, agents.Agent(
        name="agent", instructions="Answer briefly.",
        model=agents.OpenAIResponsesModel(model="gpt-4o-mini", openai_client=client))


def test_agents_openai_conversations_session_runs_two_turns(
        conv_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The session and the agent's model both take the Agents SDK's default client."""
    agents = pytest.importorskip("agents")
    from agents.models import _openai_shared

    monkeypatch.setattr(_openai_shared, "_default_openai_client", None)  # restored after
    client = openai.AsyncOpenAI(base_url=conv_url, api_key="sk-test", max_retries=0)
    agents.set_default_openai_client(client, use_for_tracing=False)
    agents.set_tracing_disabled(True)
    agent = agents.Agent(name="agent", instructions="Answer briefly.", model="gpt-4o-mini")

    async def go() -> tuple[list[Any], list[Any], list[Any]]:
        async with client:
            session = agents.OpenAIConversationsSession()
            one = await agents.Runner.run(agent, "We launch on Tuesday.", session=session)
            two = await agents.Runner.run(agent, "When do we launch?", session=session)
            items = await session.get_items()
            conversation_id = session.session_id
            listed = [i async for i in client.conversations.items.list(conversation_id,
                                                                       order="asc")]
            popped = await session.pop_item()
            await session.clear_session()
            with pytest.raises(openai.NotFoundError):
                await client.conversations.retrieve(conversation_id)
            return [one, two, popped], items, listed

    (one, two, popped), items, listed = asyncio.run(go())
    texts = [(i["role"], i["content"][0]["text"]) for i in items]
    assert texts == [("user", "We launch on Tuesday."), ("assistant", one.final_output),
                     ("user", "When do we launch?"), ("assistant", two.final_output)]
    assert [i.id for i in listed] == [i["id"] for i in items]
    assert popped["id"] == items[-1]["id"]
    # turn 2 was sent turn 1 as its history: more input tokens than its own message holds
    usage_one = one.raw_responses[0].usage
    usage_two = two.raw_responses[0].usage
    assert usage_two.input_tokens > usage_one.input_tokens + usage_one.output_tokens


def test_agents_previous_response_id_mode(base_url: str, server: OrmockServer) -> None:
    client = openai.AsyncOpenAI(base_url=base_url, api_key="sk-test", max_retries=0)
    agents, agent = _agent(client)

    async def go() -> tuple[Any, Any]:
        async with client:
            one = await agents.Runner.run(agent, "We launch on Tuesday.")
            two = await agents.Runner.run(agent, "When do we launch?",
                                          previous_response_id=one.last_response_id)
            return one, two

    one, two = asyncio.run(go())
    engine = server.engine(base_url.rsplit("/", 2)[-2])
    bodies = [entry.body for entry in engine.journal if entry.path.endswith("/responses")]
    assert bodies[-1]["previous_response_id"] == one.last_response_id
    assert json.dumps(bodies[-1]["input"]).count("Tuesday") == 0  # only its own input is sent
    usage_one, usage_two = one.raw_responses[0].usage, two.raw_responses[0].usage
    assert usage_two.input_tokens > usage_one.input_tokens + usage_one.output_tokens
    stored = engine.responses.get(two.last_response_id)
    assert stored is not None
    assert stored.response["previous_response_id"] == one.last_response_id
