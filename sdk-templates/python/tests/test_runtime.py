"""Unit tests of the runtime beyond the shared vectors: Retry-After forms, detectors, the codec, logging without
secrets, the client over real HTTP on loopback, the outbox through the client, the SQLite replay cache, the SSE
parser and the graphql-sse subscriber (resume, dedupe, verification, backoff, typed refusal)."""
from __future__ import annotations

import asyncio
import dataclasses
import enum
import json
from pathlib import Path
from typing import Any, List, Optional

import httpx
import pytest

from agentgraph_runtime import (
    AgentGraphClient,
    AgentGraphError,
    OperationSpec,
    PrivacyError,
    PrivacyRule,
    detect,
)
from agentgraph_runtime.backoff import DecorrelatedJitterBackoff
from agentgraph_runtime.codec import decode, encode
from agentgraph_runtime.inbox import Inbox, SqliteInboxStore
from agentgraph_runtime.intents import SqliteReplayCache
from agentgraph_runtime.outbox import Outbox, SqliteOutboxStore, client_send
from agentgraph_runtime.privacy import PrivacyPolicy
from agentgraph_runtime.retry_after import parse_retry_after
from agentgraph_runtime.sse import SseEvent, SseParser, SseRetry
from agentgraph_runtime.subscriptions import Subscriptions
from conformance.harness import ERROR_TABLE, FakeClock, ScriptedRandom

NOW = 1_700_000_000_000.0  # Tue, 14 Nov 2023 22:13:20 GMT
QUERY = OperationSpec("Rooms", "query Rooms { rooms { id } }", "query", False, {})
POST = OperationSpec(
    "PostMessage",
    "mutation PostMessage($input: PostInput!, $idempotencyKey: ID!) { postMessage(input: $input, "
    "idempotencyKey: $idempotencyKey) { id } }",
    "mutation",
    True,
    {"input.body": PrivacyRule("INTERNAL", True)},
)


# Retry-After -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "header, expected",
    [
        ("120", 120_000.0),
        (" 3 ", 3_000.0),
        ("Tue, 14 Nov 2023 22:13:50 GMT", 30_000.0),  # IMF-fixdate
        ("Tuesday, 14-Nov-23 22:13:50 GMT", 30_000.0),  # RFC 850, two-digit year
        ("Tue Nov 14 22:13:50 2023", 30_000.0),  # asctime
        ("Tue, 14 Nov 2023 22:00:00 GMT", 0.0),  # in the past: never below 0
        ("soon", None),
        ("-5", None),
        ("1.5", None),
        (None, None),
    ],
)
def test_retry_after_forms(header: Optional[str], expected: Optional[float]) -> None:
    assert parse_retry_after(header, NOW) == expected


def test_backoff_caps_at_max_delay_and_base_zero_never_draws() -> None:
    random = ScriptedRandom([0.99, 0.99], "unit")
    backoff = DecorrelatedJitterBackoff(200, 250, random)
    assert backoff.next(0) <= 250
    assert backoff.next(5) == 250  # 2^5.99 * tanh(...) / 1.4 * 200 ms is far above 250
    zero = DecorrelatedJitterBackoff(0, None, ScriptedRandom([], "unit"))
    assert zero.next(3) == 0.0


# Detectors ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, detector",
    [
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIE", "pem-private-key"),
        ("token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig", "jwt"),
        ("key AKIAIOSFODNN7EXAMPLE here", "api-key"),
        ("Authorization: Bearer abcdefghijklmnop1234", "bearer-token"),
        ("postgres://app:hunter2@db:5432/x", "url-password"),
        ("card 4111 1111 1111 1111", "card-number"),
        ("ssn 123-45-6789.", "ssn"),
    ],
)
def test_each_detector_fires_on_its_sample(value: str, detector: str) -> None:
    assert detector in [d.id for d in detect(value)]


def test_detectors_leave_ordinary_text_hex_digests_and_failed_luhn_alone() -> None:
    assert detect("The meeting moved to 3 pm; bring the 2024 report.") == []
    assert detect("sha256 " + "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08") == []
    assert detect("order 4111 1111 1111 1112") == []


# Codec -------------------------------------------------------------------------------------------------------


class Color(str, enum.Enum):
    RED = "RED"


@dataclasses.dataclass
class Inner:
    id: str
    color: Optional[Color] = None


@dataclasses.dataclass
class Outer:
    items: List[Inner]
    from_: Optional[str] = dataclasses.field(default=None, metadata={"graphql": "from"})
    score: Optional[float] = None


def test_codec_decodes_nested_dataclasses_enums_and_keyword_fields_and_encodes_back() -> None:
    value = decode(Outer, {"items": [{"id": "a", "color": "RED"}, {"id": "b", "color": "NEW"}], "from": "x",
                           "score": 2})
    assert value == Outer([Inner("a", Color.RED), Inner("b", "NEW")], "x", 2.0)  # type: ignore[arg-type]
    assert isinstance(value.score, float)
    assert encode(Outer([Inner("a", Color.RED)], None)) == {"items": [{"id": "a", "color": "RED"}]}
    assert encode(Outer([], "y")) == {"items": [], "from": "y"}


# Client: logging, privacy, real HTTP on loopback -------------------------------------------------------------


class ListLogger:
    def __init__(self) -> None:
        self.entries: List[dict] = []

    def log(self, entry: Any) -> None:
        self.entries.append(dict(entry))


class Tokens:
    def __init__(self, token: str) -> None:
        self.token = token

    async def get_token(self) -> str:
        return self.token

    async def refresh(self) -> str:
        return self.token


def test_logs_hold_metadata_only_never_tokens_keys_or_variables() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"data": {"postMessage": {"id": "m1"}}})

    logger = ListLogger()

    async def run() -> None:
        client = AgentGraphClient("https://api.test/graphql", ERROR_TABLE, transport=httpx.MockTransport(handler),
                                  token_provider=Tokens("secret-token-123"), logger=logger,
                                  new_key=lambda: "key-abc")
        result = await client.execute(POST, {"input": {"body": "hello private words"}})
        assert result.idempotency_key == "key-abc"
        await client.aclose()

    asyncio.run(run())
    dumped = json.dumps(logger.entries)
    assert logger.entries and logger.entries[-1]["event"] == "call"
    for secret in ("secret-token-123", "key-abc", "hello private words"):
        assert secret not in dumped


def test_a_refused_call_sends_nothing_and_names_no_value() -> None:
    sent: List[httpx.Request] = []

    async def run() -> None:
        client = AgentGraphClient("https://api.test/graphql", ERROR_TABLE,
                                  transport=httpx.MockTransport(lambda r: sent.append(r) or httpx.Response(500)))
        with pytest.raises(PrivacyError) as caught:
            await client.execute(POST, {"input": {"body": "my ssn is 123-45-6789"}})
        assert [(r.path, r.reason) for r in caught.value.refusals] == [("input.body", "ssn")]
        assert "123-45-6789" not in str(caught.value)
        await client.aclose()

    asyncio.run(run())
    assert sent == []


async def _serve(answers: List[bytes], seen: List[bytes]) -> asyncio.AbstractServer:
    """A real HTTP/1.1 server on loopback answering each request with the next canned response."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while answers:
            head = await reader.readuntil(b"\r\n\r\n")
            length = int([ln for ln in head.split(b"\r\n") if ln.lower().startswith(b"content-length:")][0]
                         .split(b":")[1])
            seen.append(head + await reader.readexactly(length))
            writer.write(answers.pop(0))
            await writer.drain()
        writer.close()

    return await asyncio.start_server(handle, "127.0.0.1", 0)


def _http(status: str, body: dict, extra: str = "") -> bytes:
    text = json.dumps(body).encode()
    return (f"HTTP/1.1 {status}\r\ncontent-type: application/graphql-response+json\r\n{extra}"
            f"content-length: {len(text)}\r\n\r\n").encode() + text


def test_real_http_on_loopback_retry_after_then_success_with_the_same_key() -> None:
    seen: List[bytes] = []
    answers = [
        _http("503 Service Unavailable", {"errors": [{"message": "busy", "extensions": {"code": "SERVICE_UNAVAILABLE"}}]},
              "retry-after: 2\r\n"),
        _http("200 OK", {"data": {"postMessage": {"id": "m1"}}, "extensions": {"idempotentReplay": True}}),
    ]
    clock = FakeClock(NOW)

    async def run() -> None:
        server = await _serve(answers, seen)
        port = server.sockets[0].getsockname()[1]
        client = AgentGraphClient(f"http://127.0.0.1:{port}/graphql", ERROR_TABLE, clock=clock,
                                  random=ScriptedRandom([0.5], "loopback"), new_key=lambda: "key-1",
                                  token_provider=Tokens("t"))
        result = await client.execute(POST, {"input": {"body": "hi"}})
        assert (result.attempts, result.replayed, result.data) == (2, True, {"postMessage": {"id": "m1"}})
        await client.aclose()
        server.close()
        await server.wait_closed()

    asyncio.run(run())
    assert clock.sleeps == [2000.0]
    assert len(seen) == 2
    for raw in seen:
        head, body = raw.split(b"\r\n\r\n", 1)
        assert b"idempotency-key: key-1" in head.lower()
        assert json.loads(body)["variables"]["idempotencyKey"] == "key-1"


# Outbox through the client, inbox.process, replay cache ------------------------------------------------------


def test_the_outbox_sends_through_the_client_with_its_persisted_key(tmp_path: Path) -> None:
    keys_sent: List[str] = []
    calls = {"n": 0}

    def handler(request: httpx.Request) -> httpx.Response:
        calls["n"] += 1
        keys_sent.append(request.headers["idempotency-key"])
        if calls["n"] == 1:
            return httpx.Response(503, json={"errors": [{"message": "x", "extensions": {"code": "SERVICE_UNAVAILABLE",
                                                                                       "retryAfterMs": 10}}]})
        return httpx.Response(200, json={"data": {"postMessage": {"id": "m"}}})

    clock = FakeClock(NOW)

    async def run() -> None:
        client = AgentGraphClient("https://api.test/graphql", ERROR_TABLE, transport=httpx.MockTransport(handler),
                                  clock=clock, random=ScriptedRandom([0.1], "outbox"))
        store = SqliteOutboxStore.open(str(tmp_path / "sdk.db"))
        outbox = await Outbox.open(store, client_send(client, {"PostMessage": POST}), clock=clock,
                                   new_key=iter(["k-1", "k-2"]).__next__)
        await outbox.enqueue("room-a", "PostMessage", {"input": {"body": "one"}})
        await outbox.enqueue("room-b", "PostMessage", {"input": {"body": "two"}})
        await outbox.drain()
        assert [(e.idempotency_key, e.state) for e in outbox.list()] == [("k-1", "SENT"), ("k-2", "SENT")]
        await outbox.close()
        await client.aclose()

    asyncio.run(run())
    # Rooms send concurrently: k-1 got the 503 and was resent (inside the client's retry) with the same key.
    assert keys_sent[0] == "k-1" and sorted(keys_sent) == ["k-1", "k-1", "k-2"]


def test_inbox_process_runs_the_handler_once_and_records_failures(tmp_path: Path) -> None:
    clock = FakeClock(NOW)
    inbox = Inbox(SqliteInboxStore.open(str(tmp_path / "inbox.db")), clock=clock, max_attempts=1)
    assert inbox.receive("s", "m1", {"n": 1}, seq=1) == "accepted"
    assert inbox.receive("s", "m2", {"n": 2}, seq=2) == "accepted"
    handled: List[Any] = []

    async def ok(payload: Any, lease: Any) -> None:
        handled.append(payload)

    def boom(payload: Any, lease: Any) -> None:
        raise ValueError("bad payload")

    first = asyncio.run(inbox.process(ok))
    second = asyncio.run(inbox.process(boom))
    assert first is not None and first["outcome"] == "PROCESSED" and handled == [{"n": 1}]
    assert second is not None and second["outcome"] == "QUARANTINED"
    assert [a.outcome for a in inbox.pending_acknowledgements()] == ["PROCESSED", "QUARANTINED"]
    assert asyncio.run(inbox.process(ok)) is None
    inbox.close()


def test_the_sqlite_replay_cache_remembers_across_a_restart(tmp_path: Path) -> None:
    path = str(tmp_path / "replay.db")
    cache = SqliteReplayCache(path)
    assert asyncio.run(cache.remember("jti-1", NOW + 1000, NOW)) is True
    cache.close()
    again = SqliteReplayCache(path)
    assert asyncio.run(again.remember("jti-1", NOW + 1000, NOW + 1)) is False
    assert asyncio.run(again.remember("jti-1", NOW + 5000, NOW + 1000)) is True  # expired entries are forgotten
    again.close()


# SSE and subscriptions ---------------------------------------------------------------------------------------


def test_sse_parser_handles_split_crlf_bom_comments_multiline_data_and_retry() -> None:
    raw = "\ufeff: hello\r\nevent: next\r\ndata: a\r\ndata: b\r\nid: 7\r\n\r\nretry: 15\n\ndata: c\r\r".encode()
    whole = SseParser().feed(raw)
    parser = SseParser()
    split: List[object] = []
    for i in range(len(raw)):  # byte by byte, splitting CRLF and the BOM
        split += parser.feed(raw[i:i + 1])
    expected = [SseEvent("next", "a\nb", "7"), SseRetry(15), SseEvent("message", "c", "7")]
    assert whole == expected and split == expected


SUB = OperationSpec("MessagesAdded", "subscription MessagesAdded($room: ID!, $afterSeq: Int) "
                    "{ messageAdded(room: $room, afterSeq: $afterSeq) { seq body } }", "subscription", False, {})


def _sse(*events: Any, complete: bool = False) -> bytes:
    out = "".join(f"event: next\ndata: {json.dumps({'data': {'messageAdded': e}})}\n\n" for e in events)
    return (":\n" + out + ("event: complete\ndata:\n\n" if complete else "")).encode()


def test_subscription_resumes_after_a_drop_dedupes_verifies_and_ends_with_the_typed_refusal() -> None:
    bodies: List[dict] = []
    answers = [
        httpx.Response(200, headers={"content-type": "text/event-stream"},
                       content=_sse({"seq": 1, "body": "a"}, {"seq": 2, "body": "b"})),
        httpx.Response(200, headers={"content-type": "text/event-stream"},
                       content=_sse({"seq": 2, "body": "b"}, {"seq": 3, "body": "forged"}, complete=True)),
        httpx.Response(403, json={"errors": [{"message": "no", "extensions": {"code": "FORBIDDEN"}}]}),
    ]

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        assert request.headers["accept"] == "text/event-stream"
        return answers.pop(0)

    async def verify(event: Any) -> str:
        if event["body"] == "forged":
            raise AgentGraphError("INTENT_FORGED_SIGNATURE", "forged", False)
        return "ok"

    clock = FakeClock(NOW)
    random = ScriptedRandom([0.5, 0.5], "sub")
    items: List[Any] = []

    async def run() -> None:
        client = AgentGraphClient("https://api.test/graphql", ERROR_TABLE)
        subs = Subscriptions(client, transport=httpx.MockTransport(handler), clock=clock, random=random)
        with pytest.raises(AgentGraphError) as caught:
            async for item in subs.subscribe(SUB, {"room": "r1"}, select=lambda d: d["messageAdded"],
                                             seq_of=lambda e: e["seq"], cursor_variable="afterSeq", verify=verify):
                items.append(item)
        assert caught.value.code == "FORBIDDEN" and type(caught.value).__name__ == "ForbiddenError"
        await subs.aclose()
        await client.aclose()

    asyncio.run(run())
    assert [(i.type, i.seq, i.verified) for i in items] == [("event", 1, "ok"), ("event", 2, "ok"), ("rejected", 3, None)]
    assert items[2].error is not None and items[2].error.code == "INTENT_FORGED_SIGNATURE"
    assert [b["variables"].get("afterSeq") for b in bodies] == [None, 2, 3]
    assert len(clock.sleeps) == 2 and random.consumed == 2  # one jittered wait per reconnect


def test_client_subscriptions_use_the_clients_token_provider_headers_transport_and_policy() -> None:
    seen: List[httpx.Request] = []
    answers = [
        httpx.Response(200, headers={"content-type": "text/event-stream"}, content=_sse({"seq": 1, "body": "a"})),
        httpx.Response(200, headers={"content-type": "text/event-stream"}, content=_sse({"seq": 2, "body": "b"})),
        httpx.Response(403, json={"errors": [{"message": "no", "extensions": {"code": "FORBIDDEN"}}]}),
    ]

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answers.pop(0)

    class Tokens:
        issued = 0

        async def get_token(self) -> str:
            Tokens.issued += 1
            return f"token-{Tokens.issued}"

        async def refresh(self) -> str:
            raise AssertionError("not asked")

    sub = OperationSpec("MessagesAdded", SUB.document, "subscription", False,
                        {"note": PrivacyRule("PERSONAL", False)})
    items: List[Any] = []

    async def run() -> None:
        client = AgentGraphClient("https://api.test/graphql", ERROR_TABLE, transport=httpx.MockTransport(handler),
                                  token_provider=Tokens(), headers={"x-app": "agent"}, clock=FakeClock(NOW),
                                  random=ScriptedRandom([0.5, 0.5], "sub"),
                                  privacy_policy=PrivacyPolicy(("PUBLIC", "INTERNAL", "PERSONAL")))
        subs = client.subscriptions()
        with pytest.raises(AgentGraphError) as caught:
            async for item in subs.subscribe(sub, {"room": "r1", "note": "hi"}, select=lambda d: d["messageAdded"],
                                             seq_of=lambda e: e["seq"], cursor_variable="afterSeq"):
                items.append(item)
        assert caught.value.code == "FORBIDDEN"
        await subs.aclose()
        await client.aclose()

    asyncio.run(run())
    assert [i.seq for i in items] == [1, 2]
    assert [str(r.url) for r in seen] == ["https://api.test/graphql/stream"] * 3
    # A fresh token from the client's provider on every connect and reconnect; the client's headers and policy.
    assert [r.headers["authorization"] for r in seen] == ["Bearer token-1", "Bearer token-2", "Bearer token-3"]
    assert [r.headers["x-app"] for r in seen] == ["agent"] * 3
    assert json.loads(seen[0].content)["variables"] == {"room": "r1", "note": "hi"}
