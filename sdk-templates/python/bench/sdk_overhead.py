"""The Python SDK's benchmark, one JSON object on stdout:

    /usr/bin/python3 sdk-templates/python/bench/sdk_overhead.py [--calls 500] [--rounds 5] [--messages 1000] [--rooms 10]

1. SDK overhead per call: a loopback HTTP server (stdlib ``http.server``, in a child process of this script, so the
   CPU figures below are the client's alone) answers every POST with the same small GraphQL result. The same query
   (Viewer) and the same idempotent mutation (CreateRoom) are sent N times, one at a time, by (a) a plain
   ``httpx.AsyncClient`` POST of the same body (hand-built, same headers, response parsed as JSON), (b) the generated
   ``agentgraph`` client from sdks/python (privacy gate, idempotency key, tenacity loop, typed result, logging off).
   A warm-up of N calls each, then R interleaved rounds; the median round's wall and CPU (``time.process_time``)
   microseconds per call.
2. Outbox throughput: M messages over K rooms enqueued into the sqlite3 outbox (a fresh file in a temp dir,
   synchronous FULL and NORMAL), then drained with a stub send that succeeds at once; messages/s for each phase.

Needs the generated SDK (``npm run codegen``) and httpx, tenacity, PyJWT, cryptography (Debian python3-* packages).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Awaitable, Callable, Dict, List, Tuple

REPO = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(REPO / "sdks/python"), str(REPO / "sdk-templates/python")]  # the generated package, its runtime

QUERY_ANSWER = json.dumps(
    {"data": {"viewer": {"role": "OWNER", "user": {"id": "u1", "email": "ada@example.com", "displayName": "Ada"},
                         "tenant": {"id": "t1", "name": "Bench"}}}},
    separators=(",", ":"),
).encode()
MUTATION_ANSWER = json.dumps(
    {"data": {"createRoom": {"room": {"id": "r1", "name": "bench", "createdAt": "2026-11-29T00:00:00.000Z"}}}},
    separators=(",", ":"),
).encode()


# ---------------------------------------------------------------------------------------------------------------
# The loopback server (runs as `sdk_overhead.py --serve` in a child process; prints its port, serves until killed).


def serve() -> None:
    requests = 0
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as a real server
        disable_nagle_algorithm = True

        def _answer(self, body: bytes) -> None:
            self.send_response_only(200)
            self.send_header("content-type", "application/graphql-response+json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            nonlocal requests
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            with lock:
                requests += 1
            self._answer(MUTATION_ANSWER if b"mutation" in body else QUERY_ANSWER)

        def do_GET(self) -> None:  # noqa: N802 - the request count, for the parent's check
            with lock:
                count = requests
            self._answer(json.dumps({"requests": count}).encode())

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


class LoopbackServer:
    """The child process serving the fixed answers; ``url`` is its GraphQL endpoint."""

    def __init__(self) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--serve"],
            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        )
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline().strip()
        if not line.isdigit():
            self.close()
            raise RuntimeError(f"the loopback server did not start (it printed {line!r} instead of its port)")
        self.base = f"http://127.0.0.1:{line}"
        self.url = f"{self.base}/graphql"

    def requests(self) -> int:
        with urllib.request.urlopen(f"{self.base}/count", timeout=5) as response:
            return int(json.loads(response.read())["requests"])

    def close(self) -> None:
        self._proc.terminate()
        self._proc.wait(timeout=10)


# ---------------------------------------------------------------------------------------------------------------
# 1. SDK overhead per call.


class StaticToken:
    async def get_token(self) -> str:
        return "bench-token"

    async def refresh(self) -> str:
        return "bench-token"


Sample = Tuple[float, float]  # (wall µs per call, CPU µs per call)


async def measure(call: Callable[[], Awaitable[Any]], n: int) -> Sample:
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    for _ in range(n):
        await call()
    wall = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    return wall * 1e6 / n, cpu * 1e6 / n


async def per_call(url: str, calls: int, rounds: int) -> Dict[str, Any]:
    import httpx

    from agentgraph import AsyncAgentGraph
    from agentgraph.operations import CreateRoom, Viewer
    from agentgraph.types import CreateRoomInput

    def dumps(value: Any) -> bytes:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()

    result: Dict[str, Any] = {}
    async with httpx.AsyncClient() as http, AsyncAgentGraph(url, token_provider=StaticToken()) as sdk:

        async def plain(mutation: bool) -> None:
            headers = {
                "content-type": "application/json",
                "accept": "application/graphql-response+json, application/json;q=0.9",
                "authorization": "Bearer bench-token",
            }
            if mutation:
                key = str(uuid.uuid4())
                headers["idempotency-key"] = key
                body = {"query": CreateRoom.document, "operationName": "CreateRoom",
                        "variables": {"input": {"name": "bench"}, "idempotencyKey": key}}
            else:
                body = {"query": Viewer.document, "operationName": "Viewer", "variables": {}}
            response = await http.post(url, content=dumps(body), headers=headers)
            response.raise_for_status()
            response.json()

        for mutation in (False, True):
            via_plain = lambda: plain(mutation)  # noqa: E731
            via_sdk = (lambda: sdk.create_room(input=CreateRoomInput(name="bench"))) if mutation else sdk.viewer
            # Warm-up (imports, connections, caches), then interleaved rounds so slow drifts hit both alike.
            await measure(via_plain, calls)
            await measure(via_sdk, calls)
            p: List[Sample] = []
            s: List[Sample] = []
            for _ in range(rounds):
                p.append(await measure(via_plain, calls))
                s.append(await measure(via_sdk, calls))
            plain_us = statistics.median_low(x[0] for x in p)
            sdk_us = statistics.median_low(x[0] for x in s)
            plain_cpu = statistics.median_low(x[1] for x in p)
            sdk_cpu = statistics.median_low(x[1] for x in s)
            result["mutation" if mutation else "query"] = {
                "plainHttpxUsPerCall": round(plain_us, 1),
                "sdkUsPerCall": round(sdk_us, 1),
                "sdkExtraUsPerCall": round(sdk_us - plain_us, 1),
                "plainCpuUsPerCall": round(plain_cpu, 1),
                "sdkCpuUsPerCall": round(sdk_cpu, 1),
                "sdkExtraCpuUsPerCall": round(sdk_cpu - plain_cpu, 1),
                # Every round's wall µs per call, in order: how noisy the machine was.
                "roundsUs": {"plain": [round(x[0], 1) for x in p], "sdk": [round(x[0], 1) for x in s]},
            }
        # The last answers decode into the generated types (a wrong answer would have raised above).
        viewer = await sdk.viewer()
        if viewer.data.viewer.user.id != "u1":
            raise RuntimeError(f"the SDK decoded an unexpected viewer: {viewer.data!r}")
    return result


# ---------------------------------------------------------------------------------------------------------------
# 2. Outbox throughput.


async def outbox_throughput(messages: int, rooms: int, synchronous_full: bool) -> Dict[str, float]:
    from agentgraph_runtime.outbox import STATES, Outbox, SqliteOutboxStore

    with tempfile.TemporaryDirectory(prefix="agentgraph-outbox-bench-") as folder:
        file = os.path.join(folder, "outbox.db")
        # The runtime opens its own files with WAL + synchronous NORMAL; FULL needs a connection opened here with the
        # same settings but synchronous FULL (an fsync per commit), which the store accepts as is.
        db = sqlite3.connect(file, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA journal_mode = WAL")
        db.execute(f"PRAGMA synchronous = {'FULL' if synchronous_full else 'NORMAL'}")
        db.execute("PRAGMA busy_timeout = 5000")
        sent = 0

        async def send(entry: Any) -> None:
            nonlocal sent
            sent += 1

        outbox = await Outbox.open(SqliteOutboxStore.open(db), send)
        try:
            t0 = time.perf_counter()
            for i in range(messages):
                await outbox.enqueue(f"room-{i % rooms}", "PostMessage", {"body": f"message {i}"})
            enqueue_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            await outbox.drain()
            drain_s = time.perf_counter() - t0
            left = len(outbox.list([state for state in STATES if state != "SENT"]))
            if sent != messages or left != 0:
                raise RuntimeError(f"the outbox sent {sent} of {messages} messages and left {left} unsent")
        finally:
            await outbox.close()
            db.close()
    return {
        "enqueueMs": round(enqueue_s * 1000, 1),
        "enqueuePerSecond": round(messages / enqueue_s),
        "drainMs": round(drain_s * 1000, 1),
        "drainPerSecond": round(messages / drain_s),
        "endToEndPerSecond": round(messages / (enqueue_s + drain_s)),
    }


# ---------------------------------------------------------------------------------------------------------------


def positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return n


async def bench(calls: int, rounds: int, messages: int, rooms: int) -> Dict[str, Any]:
    import httpx

    result: Dict[str, Any] = {
        "calls": calls,
        "rounds": rounds,
        "python": platform.python_version(),
        "httpx": httpx.__version__,
        "sqlite": sqlite3.sqlite_version,
        "processors": os.cpu_count() or 0,
    }
    server = LoopbackServer()
    try:
        result.update(await per_call(server.url, calls, rounds))
        expected = 2 * 2 * (rounds + 1) * calls + 1
        seen = server.requests()
        if seen != expected:
            raise RuntimeError(f"the loopback server saw {seen} requests, expected {expected}")
        result["serverRequests"] = seen
    finally:
        server.close()

    outbox: Dict[str, Any] = {"messages": messages, "rooms": rooms}
    await outbox_throughput(min(messages, 200), rooms, True)  # warm-up (imports, SQLite), discarded
    for full in (True, False):
        outbox["synchronousFull" if full else "synchronousNormal"] = await outbox_throughput(messages, rooms, full)
    result["outbox"] = outbox
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description="The Python SDK's overhead per call and outbox throughput.")
    parser.add_argument("--calls", type=positive, default=500, help="calls per round and client (default 500)")
    parser.add_argument("--rounds", type=positive, default=5, help="measured rounds, after one warm-up (default 5)")
    parser.add_argument("--messages", type=positive, default=1000, help="outbox messages (default 1000)")
    parser.add_argument("--rooms", type=positive, default=10, help="outbox rooms (default 10)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve()
        return 0
    result = asyncio.run(bench(args.calls, args.rounds, args.messages, args.rooms))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
