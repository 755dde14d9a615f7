"""SyncAgentGraphClient, the blocking twin of the async client: the same retry decisions and typed errors over
httpx.Client (one idempotency key on every attempt, the exact backoff slept by its SyncClock, a token refresh after
UNAUTHENTICATED), the privacy gate before anything is sent, and lazy pagination."""
from __future__ import annotations

import json
from typing import Any, List

import httpx
import pytest

from agentgraph_runtime import AgentGraphError, OperationSpec, PrivacyError, PrivacyRule, SyncAgentGraphClient
from conformance.harness import ERROR_TABLE, ScriptedRandom

NOW = 1_700_000_000_000.0
POST = OperationSpec(
    "PostMessage",
    "mutation PostMessage($input: PostInput!, $idempotencyKey: ID!) { postMessage(input: $input, "
    "idempotencyKey: $idempotencyKey) { id } }",
    "mutation",
    True,
    {"input.body": PrivacyRule("INTERNAL", True)},
)
ROOMS = OperationSpec("Rooms", "query Rooms($after: String) { rooms(after: $after) { edges { node { id } } "
                      "pageInfo { hasNextPage endCursor } } }", "query", False, {})


class FakeSyncClock:
    def __init__(self) -> None:
        self.current = NOW
        self.sleeps: List[float] = []

    def now(self) -> float:
        return self.current

    def sleep(self, ms: float) -> None:
        self.sleeps.append(ms)
        self.current += ms


class Tokens:
    def __init__(self) -> None:
        self.refreshes = 0

    def get_token(self) -> str:
        return "old" if self.refreshes == 0 else "new"

    def refresh(self) -> str:
        self.refreshes += 1
        return "new"


def error(status: int, code: str, **ext: Any) -> httpx.Response:
    return httpx.Response(status, json={"errors": [{"message": code.lower(), "extensions": {"code": code, **ext}}]})


def test_a_mutation_is_retried_with_one_key_after_the_servers_wait_and_a_token_refresh() -> None:
    seen: List[httpx.Request] = []
    answers = [error(401, "UNAUTHENTICATED"), error(503, "SERVICE_UNAVAILABLE", retryAfterMs=250),
               httpx.Response(200, json={"data": {"postMessage": {"id": "m1"}}, "extensions": {"idempotentReplay": True}})]

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answers.pop(0)

    clock, tokens = FakeSyncClock(), Tokens()
    with SyncAgentGraphClient("https://api.test/graphql", ERROR_TABLE, transport=httpx.MockTransport(handler),
                              clock=clock, token_provider=tokens, random=ScriptedRandom([0.5], "sync"),
                              new_key=lambda: "key-1") as client:
        result = client.execute(POST, {"input": {"body": "hello"}})
    assert result.data == {"postMessage": {"id": "m1"}}
    assert (result.attempts, result.replayed, result.idempotency_key) == (3, True, "key-1")
    assert clock.sleeps == [250.0] and tokens.refreshes == 1
    assert [r.headers["idempotency-key"] for r in seen] == ["key-1"] * 3
    assert [r.headers["authorization"] for r in seen] == ["Bearer old", "Bearer new", "Bearer new"]
    assert {json.loads(r.content)["variables"]["idempotencyKey"] for r in seen} == {"key-1"}


def test_typed_errors_and_the_privacy_gate() -> None:
    seen: List[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return error(403, "FORBIDDEN")

    with SyncAgentGraphClient("https://api.test/graphql", ERROR_TABLE,
                              transport=httpx.MockTransport(handler)) as client:
        with pytest.raises(AgentGraphError) as caught:
            client.execute(ROOMS, {})
        assert (caught.value.code, caught.value.give_up_reason, caught.value.attempts) == \
            ("FORBIDDEN", "not-retryable", 1)
        with pytest.raises(PrivacyError):
            client.execute(POST, {"input": {"body": "my key is AKIAIOSFODNN7EXAMPLE"}})
    assert len(seen) == 1  # the refused call sent nothing


def test_pagination_is_lazy_and_typed_by_the_item_function() -> None:
    afters: List[Any] = []

    def handler(request: httpx.Request) -> httpx.Response:
        after = json.loads(request.content)["variables"].get("after")
        afters.append(after)
        ids, more = (["a", "b"], True) if after is None else (["c"], False)
        return httpx.Response(200, json={"data": {"rooms": {"edges": [{"node": {"id": i}} for i in ids],
                                                            "pageInfo": {"hasNextPage": more, "endCursor": "c1"}}}})

    with SyncAgentGraphClient("https://api.test/graphql", ERROR_TABLE,
                              transport=httpx.MockTransport(handler)) as client:
        rooms = client.paginate(ROOMS, {}, lambda d: d["rooms"], lambda node: node["id"].upper())
        assert next(rooms) == "A" and afters == [None]
        assert list(rooms) == ["B", "C"] and afters == [None, "c1"]
