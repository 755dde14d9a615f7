"""The sidecar's brokered credentials (agentgraph_runtime/sidecar): a fake broker on a real Unix socket (the C#
host's one-line protocol), a fake clock for exact refresh times, every broker error mapped to its exception, one
broker request for concurrent callers, no token in logs, repr or files; the sidecar's privacy gate refuses secrets
and SSNs while PERSONAL fields are allowed, before any request is built. The real C# broker is exercised end to end
by test/e2e/python-sidecar.test.ts."""
from __future__ import annotations

import asyncio
import builtins
import json
import logging
import os
from pathlib import Path
from typing import Any, Callable, List, Optional

import httpx
import pytest

from agentgraph_runtime import AgentGraphClient, JsonLogger, OperationSpec, PrivacyError, PrivacyRule
from agentgraph_runtime.sidecar import (
    BROKER_SOCKET_ENV,
    BrokerAccessDeniedError,
    BrokeredTokenProvider,
    BrokerError,
    BrokerProtocolError,
    BrokerRequestError,
    BrokerUnavailableError,
    sidecar_client_options,
)

START = 1_700_000_000_000.0
# Shaped like a JWT (three base64url parts); the provider never decodes it.
TOKEN_1 = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJvbmUifQ.c2lnbmF0dXJlLW9uZQ"
TOKEN_2 = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ0d28ifQ.c2lnbmF0dXJlLXR3bw"
ERROR_TABLE = {"codes": [{"code": "UNAUTHENTICATED", "http": 401, "retry": "refresh", "description": ""}]}


class Clock:
    def __init__(self) -> None:
        self.current = START

    def now(self) -> float:
        return self.current

    async def sleep(self, ms: float, signal: Any = None) -> None:
        self.current += ms


class ListLogger:
    def __init__(self) -> None:
        self.entries: List[dict] = []

    def log(self, entry: Any) -> None:
        self.entries.append(dict(entry))


class FakeBroker:
    """The broker's protocol on a real Unix socket: one line in, one scripted answer line out, then close."""

    def __init__(self, path: str, answers: List[Any]) -> None:
        self.path = path
        self.answers = list(answers)
        self.requests: List[bytes] = []
        self.gate: Optional[asyncio.Event] = None
        self.server: Optional[asyncio.AbstractServer] = None

    async def __aenter__(self) -> "FakeBroker":
        self.server = await asyncio.start_unix_server(self._handle, self.path)
        return self

    async def __aexit__(self, *exc: Any) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.requests.append(await reader.readline())
        if self.gate is not None:
            await self.gate.wait()
        answer = self.answers.pop(0)
        if answer is not None:
            writer.write(answer if isinstance(answer, bytes) else (json.dumps(answer) + "\n").encode())
            await writer.drain()
            writer.close()
        else:
            await asyncio.Event().wait()  # never answers


def grant(token: str, expires_in: int = 300) -> dict:
    return {"access_token": token, "expires_in": expires_in}


def run_with_broker(tmp_path: Path, answers: List[Any], body: Callable[[FakeBroker], Any]) -> FakeBroker:
    broker = FakeBroker(str(tmp_path / "broker.sock"), answers)

    async def main() -> None:
        async with broker:
            await body(broker)

    asyncio.run(main())
    return broker


def test_one_request_then_the_held_token_until_60s_before_expiry(tmp_path: Path) -> None:
    clock = Clock()

    async def body(broker: FakeBroker) -> None:
        provider = BrokeredTokenProvider(broker.path, clock=clock)
        assert await provider.get_token() == TOKEN_1
        assert provider.expires_at == START + 300_000
        clock.current = START + 239_999  # 60 s (> 20 % of 300 s) before expiry is the refresh point
        assert await provider.get_token() == TOKEN_1
        assert provider.requests == 1
        clock.current = START + 240_000
        assert await provider.get_token() == TOKEN_2
        assert provider.requests == 2 and provider.expires_at == START + 240_000 + 300_000

    broker = run_with_broker(tmp_path, [grant(TOKEN_1), grant(TOKEN_2)], body)
    assert broker.requests == [b'{"scope":"api:read api:write"}\n'] * 2


def test_a_long_lived_token_is_refreshed_when_20_percent_of_its_life_remains(tmp_path: Path) -> None:
    clock = Clock()

    async def body(broker: FakeBroker) -> None:
        # 1000 s is above the broker's 300 s cap, so a custom margin shows the fraction rule on an allowed 300 s.
        provider = BrokeredTokenProvider(broker.path, clock=clock, refresh_margin_ms=10_000, audience="agentgraph",
                                         scope="api:read")
        await provider.get_token()
        clock.current = START + 239_999
        await provider.get_token()
        assert provider.requests == 1
        clock.current = START + 240_000  # 20 % of 300 s = 60 s left
        await provider.get_token()
        assert provider.requests == 2

    broker = run_with_broker(tmp_path, [grant(TOKEN_1), grant(TOKEN_2)], body)
    assert broker.requests[0] == b'{"audience":"agentgraph","scope":"api:read"}\n'


def test_concurrent_callers_share_one_broker_request_and_refresh_always_asks_again(tmp_path: Path) -> None:
    async def body(broker: FakeBroker) -> None:
        broker.gate = asyncio.Event()
        provider = BrokeredTokenProvider(broker.path, clock=Clock())
        callers = [asyncio.ensure_future(provider.get_token()) for _ in range(5)]
        while not broker.requests:
            await asyncio.sleep(0)
        broker.gate.set()
        assert await asyncio.gather(*callers) == [TOKEN_1] * 5
        assert provider.requests == 1
        assert await provider.refresh() == TOKEN_2  # the held token was refused: a new one, although still fresh
        assert await provider.get_token() == TOKEN_2
        assert provider.requests == 2

    broker = run_with_broker(tmp_path, [grant(TOKEN_1), grant(TOKEN_2)], body)
    assert len(broker.requests) == 2


@pytest.mark.parametrize(
    "answer, cls, code",
    [
        ({"error": "access_denied", "error_description": "refused: /usr/bin/perl is not an allowed executable"},
         BrokerAccessDeniedError, "access_denied"),
        ({"error": "invalid_target", "error_description": "audience must be agentgraph"}, BrokerRequestError,
         "invalid_target"),
        ({"error": "invalid_scope", "error_description": "broader"}, BrokerRequestError, "invalid_scope"),
        ({"error": "invalid_grant", "error_description": "expired"}, BrokerRequestError, "invalid_grant"),
        ({"error": "invalid_request", "error_description": "unknown member"}, BrokerRequestError, "invalid_request"),
        ({"error": "temporarily_unavailable", "error_description": "identity unreachable"}, BrokerUnavailableError,
         "temporarily_unavailable"),
        ({"error": "something_new"}, BrokerError, "something_new"),
        (b"not json\n", BrokerProtocolError, "protocol"),
        ({**grant(TOKEN_1), "refresh_token": "r-1"}, BrokerProtocolError, "protocol"),
        ({"access_token": "opaque", "expires_in": 300}, BrokerProtocolError, "protocol"),
        (grant(TOKEN_1, 301), BrokerProtocolError, "protocol"),
        (grant(TOKEN_1, 0), BrokerProtocolError, "protocol"),
        (b'{"access_token":"a.b.c","expires_in":300}', BrokerProtocolError, "protocol"),  # no newline: cut short
    ],
)
def test_each_broker_refusal_or_bad_answer_is_its_own_exception(tmp_path: Path, answer: Any, cls: type,
                                                                code: str) -> None:
    async def body(broker: FakeBroker) -> None:
        provider = BrokeredTokenProvider(broker.path, clock=Clock())
        with pytest.raises(cls) as caught:
            await provider.get_token()
        assert type(caught.value) is cls and caught.value.code == code
        if isinstance(answer, dict) and answer.get("error_description"):
            assert answer["error_description"] in str(caught.value)
        assert "r-1" not in str(caught.value)
        assert provider.expires_at is None

    run_with_broker(tmp_path, [answer], body)


def test_no_broker_a_silent_broker_and_no_socket_path_say_what_to_do(tmp_path: Path, monkeypatch: Any) -> None:
    async def missing() -> None:
        provider = BrokeredTokenProvider(str(tmp_path / "absent.sock"))
        with pytest.raises(BrokerUnavailableError, match="No token broker at .*absent.sock"):
            await provider.get_token()

    asyncio.run(missing())

    async def silent(broker: FakeBroker) -> None:
        provider = BrokeredTokenProvider(broker.path, timeout_ms=100)
        with pytest.raises(BrokerUnavailableError, match="did not answer within 0.1 s"):
            await provider.get_token()

    run_with_broker(tmp_path, [None], silent)

    monkeypatch.delenv(BROKER_SOCKET_ENV, raising=False)
    with pytest.raises(ValueError, match=BROKER_SOCKET_ENV):
        BrokeredTokenProvider()
    monkeypatch.setenv(BROKER_SOCKET_ENV, "/run/user/1000/agentgraph/broker.sock")
    assert BrokeredTokenProvider().socket_path == "/run/user/1000/agentgraph/broker.sock"


def test_the_token_never_reaches_logs_repr_or_files(tmp_path: Path, monkeypatch: Any, caplog: Any) -> None:
    writes: List[str] = []
    real_open, real_os_open = builtins.open, os.open

    def spy_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if any(m in mode for m in "wax+"):
            writes.append(str(file))
        return real_open(file, mode, *args, **kwargs)

    def spy_os_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            writes.append(str(path))
        return real_os_open(path, flags, *args, **kwargs)

    clock = Clock()
    seen: List[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers["authorization"])
        if len(seen) == 1:
            return httpx.Response(401, json={"errors": [{"message": "expired", "extensions": {"code": "UNAUTHENTICATED"}}]})
        return httpx.Response(200, json={"data": {"viewer": {"id": "u1"}}})

    async def body(broker: FakeBroker) -> None:
        monkeypatch.setattr(builtins, "open", spy_open)
        monkeypatch.setattr(os, "open", spy_os_open)
        provider = BrokeredTokenProvider(broker.path, clock=clock, logger=JsonLogger("agentgraph.sidecar.test"))
        client = AgentGraphClient("https://api.test/graphql", ERROR_TABLE, transport=httpx.MockTransport(handler),
                                  token_provider=provider, clock=clock, logger=JsonLogger("agentgraph.sidecar.test"))
        result = await client.execute(OperationSpec("Viewer", "query Viewer { viewer { id } }", "query", False, {}))
        assert result.data == {"viewer": {"id": "u1"}} and result.attempts == 2
        assert TOKEN_1 not in repr(provider) and TOKEN_2 not in repr(provider)
        await client.aclose()
        monkeypatch.undo()

    with caplog.at_level(logging.INFO, logger="agentgraph.sidecar.test"):
        run_with_broker(tmp_path, [grant(TOKEN_1), grant(TOKEN_2)], body)
    # The 401 made the client ask the provider to refresh: the second request carried the second token.
    assert seen == [f"Bearer {TOKEN_1}", f"Bearer {TOKEN_2}"]
    events = [json.loads(r.getMessage()) for r in caplog.records]
    assert [e["outcome"] for e in events if e["event"] == "broker-token"] == ["issued", "issued"]
    assert [e["expiresIn"] for e in events if e["event"] == "broker-token"] == [300, 300]
    assert caplog.records and all(TOKEN_1 not in r.getMessage() and TOKEN_2 not in r.getMessage()
                                  for r in caplog.records)
    assert writes == []


SAVE = OperationSpec(
    "PutMemory",
    "mutation PutMemory($id: ID!, $input: PutMemoryInput!, $idempotencyKey: ID!) { putMemory(id: $id, input: $input, "
    "idempotencyKey: $idempotencyKey) { record { id } } }",
    "mutation",
    True,
    {"id": PrivacyRule("INTERNAL", True), "input.content": PrivacyRule("PERSONAL", True),
     "input.kind": PrivacyRule("INTERNAL", True)},
)


@pytest.mark.parametrize(
    "content, reason",
    [
        ("customer SSN 123-45-6789 from the transcript", "ssn"),
        ("aws key AKIAIOSFODNN7EXAMPLE in the log", "api-key"),
        ("db at postgres://app:hunter2@db.internal/app", "url-password"),
    ],
)
def test_the_sidecar_gate_refuses_secrets_and_ssns_while_personal_fields_are_allowed(content: str,
                                                                                       reason: str) -> None:
    sent: List[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json={"data": {"putMemory": {"record": {"id": "r1"}}}})

    async def run() -> None:
        client = AgentGraphClient("https://api.test/graphql", ERROR_TABLE, transport=httpx.MockTransport(handler),
                                  **sidecar_client_options())
        ok = await client.execute(SAVE, {"id": "r1", "input": {"kind": "note", "content": "the user likes tea"}})
        assert ok.data == {"putMemory": {"record": {"id": "r1"}}}
        with pytest.raises(PrivacyError) as caught:
            await client.execute(SAVE, {"id": "r2", "input": {"kind": "note", "content": content}})
        assert [(r.path, r.reason) for r in caught.value.refusals] == [("input.content", reason)]
        assert content not in str(caught.value)
        await client.aclose()

    asyncio.run(run())
    assert len(sent) == 1  # only the clean record left the process
