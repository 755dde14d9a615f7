"""The Python port of test/conformance/ts/{fake-clock,scripted-random,match,scripted-transport,sdk-harness}.ts:
a fake clock, the vector's random numbers, an httpx.MockTransport that plays `exchanges`, and the client a vector
describes."""
from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional

import httpx

from agentgraph_runtime import (
    AgentGraphClient,
    AgentGraphError,
    OperationSpec,
    PrivacyError,
    PrivacyPolicy,
    privacy_table,
)

REPO = Path(__file__).resolve().parents[4]
VECTORS = REPO / "test" / "conformance" / "vectors"
SCHEMA = REPO / "test" / "conformance" / "vector.schema.json"
ERROR_TABLE = json.loads((REPO / "schemas" / "errors.json").read_text())
DEFAULT_BASE_URL = "https://api.agentgraph.test/graphql"
DEFAULT_START = 1_700_000_000_000
DELAY_TOLERANCE_MS = 0.0001
ELAPSED_TOLERANCE_MS = 0.001


class Failure(AssertionError):
    pass


def fail(file: str, problems: List[str]) -> None:
    if problems:
        raise Failure(f"{file}:\n  - " + "\n  - ".join(problems))


class FakeClock:
    """sleep(ms) records ms, moves time forward exactly and returns at once; advance(ms) moves without recording."""

    def __init__(self, start: Optional[float] = None) -> None:
        self.current = float(DEFAULT_START if start is None else start)
        self.sleeps: List[float] = []

    def now(self) -> float:
        return self.current

    def advance(self, ms: float) -> None:
        if not ms >= 0:
            raise ValueError(f"FakeClock.advance needs a non-negative number, got {ms}")
        self.current += ms

    async def sleep(self, ms: float) -> None:
        self.sleeps.append(ms)
        self.current += ms
        await asyncio.sleep(0)  # a wait is a suspension point: a cancelled caller stops here


class ScriptedRandom:
    def __init__(self, values: List[float], file: str) -> None:
        self.values = list(values)
        self.file = file
        self.consumed = 0

    def __call__(self) -> float:
        if self.consumed >= len(self.values):
            raise Failure(f"{self.file}: the SDK drew random number #{self.consumed + 1} but the vector lists "
                          f"{len(self.values)}")
        value = self.values[self.consumed]
        self.consumed += 1
        return value


def json_equal(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return sorted(a) == sorted(b) and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def subset_problems(expected: Any, actual: Any, path: str = "$") -> List[str]:
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{path}: expected an object, got {json.dumps(actual)}"]
        out: List[str] = []
        for k, v in expected.items():
            out += subset_problems(v, actual[k], f"{path}.{k}") if k in actual else [f"{path}.{k}: missing"]
        return out
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{path}: expected an array of {len(expected)}, got {json.dumps(actual)}"]
        out = []
        for i, v in enumerate(expected):
            out += subset_problems(v, actual[i], f"{path}[{i}]")
        return out
    return [] if json_equal(expected, actual) else [f"{path}: expected {json.dumps(expected)}, got {json.dumps(actual)}"]


def sleeps_problems(expected: List[float], actual: List[float]) -> List[str]:
    same = len(expected) == len(actual) and all(
        abs(e - a) <= DELAY_TOLERANCE_MS + 1e-9 for e, a in zip(expected, actual)
    )
    return [] if same else [f"sleeps: expected {expected}, got {actual}"]


class ScriptedTransport(httpx.AsyncBaseTransport):
    """Answers requests from the vector's exchanges, in order, recording every mismatch (never raising one). Each
    answer takes one turn of the event loop, as a real network does: a caller cancelled while its request is in flight
    (``abortCaller``) gets CancelledError there, before the answer reaches it."""

    def __init__(self, exchanges: List[Dict[str, Any]], clock: FakeClock) -> None:
        self.exchanges = exchanges
        self.clock = clock
        self.problems: List[str] = []
        self.requests = 0
        self.abort_caller = lambda: self.problems.append("a response has abortCaller but nothing can abort")

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await request.aread()
        response = self.handle(request)
        await asyncio.sleep(0)
        return response

    def handle(self, request: httpx.Request) -> httpx.Response:
        index = self.requests
        self.requests += 1
        if index >= len(self.exchanges):
            self.problems.append(f"request #{index + 1} was sent, but the vector scripts only {len(self.exchanges)}")
            raise httpx.ConnectError("conformance: unexpected request", request=request)
        exchange = self.exchanges[index]
        self.check(index, request, exchange["request"])
        r = exchange["response"]
        if r.get("abortCaller"):
            self.abort_caller()
        if r.get("latencyMs"):
            self.clock.advance(r["latencyMs"])
        if r.get("fault") == "network":
            raise httpx.ConnectError("connection reset (scripted network fault)", request=request)
        if r.get("fault") == "timeout":
            raise httpx.ReadTimeout("timed out (scripted)", request=request)
        if "bodyText" in r:
            content = r["bodyText"].encode("utf-8")
        elif "body" in r:
            content = json.dumps(r["body"]).encode("utf-8")
        else:
            content = b""
        headers = {"content-type": "application/graphql-response+json; charset=utf-8", **r.get("headers", {})}
        return httpx.Response(r.get("status", 200), headers=headers, content=content)

    def final_problems(self) -> List[str]:
        unused = (
            [f"only {self.requests} of the {len(self.exchanges)} scripted requests were sent"]
            if self.requests < len(self.exchanges)
            else []
        )
        return self.problems + unused

    def check(self, index: int, request: httpx.Request, want: Mapping[str, Any]) -> None:
        at = f"request #{index + 1}"
        if "method" in want and request.method != want["method"]:
            self.problems.append(f"{at}: method {request.method}, expected {want['method']}")
        if "url" in want and str(request.url) != want["url"]:
            self.problems.append(f"{at}: url {request.url}, expected {want['url']}")
        for name, value in (want.get("headers") or {}).items():
            got = request.headers.get(name)
            if value is None and got is not None:
                self.problems.append(f"{at}: header {name} must be absent")
            if value is not None and got != value:
                self.problems.append(f"{at}: header {name} is {got}, expected {value}")
        if "body" not in want and "variables" not in want:
            return
        try:
            body = json.loads(request.content.decode("utf-8"))
        except ValueError:
            self.problems.append(f"{at}: the body is not JSON")
            return
        if "body" in want:
            self.problems += subset_problems(want["body"], body, f"{at} body")
        if "variables" in want and not json_equal(want["variables"], body.get("variables")):
            self.problems.append(
                f"{at}: variables {json.dumps(body.get('variables'))}, expected exactly {json.dumps(want['variables'])}"
            )


class ScriptedTokens:
    def __init__(self, current: str, refreshes: List[Optional[str]], counters: Dict[str, int]) -> None:
        self.current = current
        self.refreshes = list(refreshes)
        self.counters = counters

    async def get_token(self) -> str:
        return self.current

    async def refresh(self) -> str:
        self.counters["tokenRefreshes"] += 1
        nxt = self.refreshes.pop(0) if self.refreshes else None
        if nxt is None:
            raise RuntimeError("scripted refresh failure")
        self.current = nxt
        return nxt


class Harness:
    def __init__(self, config: Optional[Mapping[str, Any]], exchanges: List[Dict[str, Any]], clock: FakeClock,
                 random: ScriptedRandom) -> None:
        cfg = config or {}
        self.problems: List[str] = []
        self.counters = {"keysMade": 0, "tokenRefreshes": 0}
        self.transport = ScriptedTransport(exchanges, clock)
        keys = list(cfg.get("idempotencyKeys", []))

        def new_key() -> str:
            self.counters["keysMade"] += 1
            if not keys:
                self.problems.append(f"the SDK made idempotency key #{self.counters['keysMade']}, the vector lists fewer")
                return f"unexpected-key-{self.counters['keysMade']}"
            return keys.pop(0)

        tokens = cfg.get("tokens")
        self.client = AgentGraphClient(
            cfg.get("baseUrl", DEFAULT_BASE_URL),
            ERROR_TABLE,
            transport=self.transport,
            clock=clock,
            random=random,
            new_key=new_key,
            token_provider=ScriptedTokens(tokens["current"], tokens.get("refreshes", []), self.counters)
            if tokens
            else None,
            retry=cfg.get("retry"),
            max_payload_bytes=cfg.get("maxPayloadBytes"),
            privacy_policy=PrivacyPolicy(tuple(cfg["privacyPolicy"]["allow"])) if "privacyPolicy" in cfg else None,
            capabilities=cfg.get("capabilities"),
        )


def operation_of(op: Mapping[str, Any]) -> OperationSpec:
    return OperationSpec(op["name"], op["document"], op["kind"], op["idempotent"], privacy_table(op["privacy"]))


#: The TypeScript class names the vectors use, for the Python classes whose names differ.
CLASS_ALIASES = {"TimeoutError_": "TimeoutError"}


def describe(thrown: BaseException) -> str:
    if isinstance(thrown, AgentGraphError):
        return f"{type(thrown).__name__} {thrown.code}: {thrown}"
    return f"{type(thrown).__name__}: {thrown}"


def error_problems(expected: Mapping[str, Any], thrown: BaseException) -> List[str]:
    if expected["code"] == "ABORTED":  # the caller cancelled: asyncio's CancelledError
        return [] if isinstance(thrown, asyncio.CancelledError) else [f"expected CancelledError, got {describe(thrown)}"]
    if not isinstance(thrown, AgentGraphError):
        return [f"expected AgentGraphError {expected['code']}, got {describe(thrown)}"]
    problems: List[str] = []

    def check(name: str, got: Any) -> None:
        if name in expected and not json_equal(expected[name], got):
            problems.append(f"error.{name}: expected {json.dumps(expected[name])}, got {json.dumps(got)}")

    check("code", thrown.code)
    check("class", CLASS_ALIASES.get(type(thrown).__name__, type(thrown).__name__))
    check("retryable", thrown.retryable)
    check("status", thrown.status)
    check("retryAfterMs", thrown.retry_after_ms)
    check("correlationId", thrown.correlation_id)
    check("attempts", thrown.attempts)
    check("giveUpReason", thrown.give_up_reason)
    if "refusals" in expected:
        got = [{"path": r.path, "reason": r.reason} for r in thrown.refusals] if isinstance(thrown, PrivacyError) else None
        check("refusals", got)
    for secret in expected.get("messageExcludes", []):
        if secret in str(thrown):
            problems.append("error.message contains a refused value")
    return problems


__all__ = ["math"]
