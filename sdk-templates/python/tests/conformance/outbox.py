"""Executor of `outbox` vectors (port of ts/outbox.ts; see its header for the fields): the outbox on its SQLite
store, driven step by step with the fake clock and a scripted send function."""
from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any, Dict, List

from agentgraph_runtime import AgentGraphError
from agentgraph_runtime.outbox import Outbox, SqliteOutboxStore, exponential_outbox_delay

from .harness import FakeClock, ScriptedRandom, fail, json_equal


async def settle(condition: Any, turns: int = 5000) -> bool:
    """Yields to the event loop until condition() holds; False after `turns` turns (no timers involved)."""
    for _ in range(turns):
        if condition():
            return True
        await asyncio.sleep(0)
    return condition()


def state_problems(where: str, want: Dict[str, Any], entries: List[Any], recovered: int) -> List[str]:
    problems: List[str] = []
    if "entries" in want:
        got = [{"key": e.idempotency_key, "room": e.room, "state": e.state, "attempts": e.attempts,
                "failedDeliveries": e.failed_deliveries,
                "lastError": {"code": e.last_error.code} if e.last_error else None} for e in entries]
        same = len(got) == len(want["entries"]) and all(
            w["key"] == g["key"] and w["room"] == g["room"] and w["state"] == g["state"]
            and w["attempts"] == g["attempts"]
            and ("failedDeliveries" not in w or w["failedDeliveries"] == g["failedDeliveries"])
            and ("lastError" not in w or json_equal(w["lastError"], g["lastError"]))
            and ("operation" not in w or w["operation"] == e.operation)
            and ("variables" not in w or json_equal(w["variables"], e.variables))
            for w, g, e in zip(want["entries"], got, entries)
        )
        if not same:
            problems.append(f"{where} entries: expected {json.dumps(want['entries'])}, got {json.dumps(got)}")
    if "recovered" in want and want["recovered"] != recovered:
        problems.append(f"{where} recovered: expected {want['recovered']}, got {recovered}")
    if "deadLetters" in want:
        dead = [e.idempotency_key for e in entries if e.state in ("POISON", "EXPIRED")]
        if not json_equal(want["deadLetters"], dead):
            problems.append(f"{where} deadLetters: expected {want['deadLetters']}, got {dead}")
    return problems


async def run(vector: Dict[str, Any], file: str, clock: FakeClock, random: ScriptedRandom) -> None:
    directory = tempfile.mkdtemp(prefix="conformance-outbox-")
    path = str(Path(directory) / "outbox.db")
    start = clock.now()
    problems: List[str] = []
    config = vector["config"]
    keys = list(config["idempotencyKeys"])
    outcomes = {k: list(v) for k, v in (vector.get("outcomes") or {}).items()}
    sends: List[Dict[str, Any]] = []
    counters = {"hung": 0, "ids": 0, "keys": 0}

    async def send(entry: Any) -> Any:
        sends.append({"room": entry.room, "key": entry.idempotency_key, "at": clock.now() - start})
        queue = outcomes.get(entry.idempotency_key) or []
        outcome = queue.pop(0) if queue else "ok"
        if outcome == "ok":
            return {"ok": True}
        if outcome == "hang":
            counters["hung"] += 1
            await asyncio.get_running_loop().create_future()  # never settles
        e = outcome["error"]
        raise AgentGraphError(e["code"], f"{e['code']} (scripted)", e["retryable"],
                              retry_after_ms=e.get("retryAfterMs"), status=e.get("status"))

    def new_id() -> str:
        counters["ids"] += 1
        return f"entry-{counters['ids']}"

    def new_key() -> str:
        counters["keys"] += 1
        if not keys:
            problems.append(f"the outbox made idempotency key #{counters['keys']}, the vector lists fewer")
            return f"unlisted-key-{counters['keys']}"
        return keys.pop(0)

    retry = config.get("retry") or {}

    async def open_outbox() -> Any:
        store = SqliteOutboxStore.open(path)
        options: Dict[str, Any] = {
            "clock": clock, "new_id": new_id, "new_key": new_key,
            "delay_for": exponential_outbox_delay(retry.get("baseDelayMs"), retry.get("maxDelayMs")),
            "key_retention_ms": config.get("keyRetentionMs"),
        }
        if "concurrency" in config:
            options["concurrency"] = config["concurrency"]
        if "ttlMs" in config:
            options["ttl_ms"] = config["ttlMs"]
        if "maxFailedDeliveries" in config:
            options["max_failed_deliveries"] = config["maxFailedDeliveries"]
        return store, await Outbox.open(store, send, **options)

    store, outbox = await open_outbox()
    abandoned: List[asyncio.Future] = []
    try:
        for index, step in enumerate(vector["steps"]):
            where = f"step {index + 1}"
            if "enqueue" in step:
                e = step["enqueue"]
                await outbox.enqueue(e["room"], e["operation"], e.get("variables"))
            elif "drain" in step:
                await outbox.drain()
            elif "runUntilHung" in step:
                abandoned.append(asyncio.ensure_future(outbox.drain()))
                if not await settle(lambda: counters["hung"] >= step["runUntilHung"]):
                    problems.append(f"{where}: expected {step['runUntilHung']} hanging sends, got {counters['hung']}")
                    break
            elif "crash" in step:
                store.close()  # the process is gone: hanging sends never settle, nothing more is written
                counters["hung"] = 0
                store, outbox = await open_outbox()
            elif "advance" in step:
                clock.advance(step["advance"])
            else:
                problems += state_problems(where, step["check"], outbox.list(), outbox.counts["recovered"])
        want = {k: v for k, v in vector["expect"].items() if k != "sends"}
        problems += state_problems("expect", want, outbox.list(), outbox.counts["recovered"])
        want_sends = vector["expect"]["sends"]
        for room in sorted({s["room"] for s in want_sends + sends}):
            w = [{"key": s["key"], "at": s["at"]} for s in want_sends if s["room"] == room]
            g = [{"key": s["key"], "at": s["at"]} for s in sends if s["room"] == room]
            if not json_equal(w, g):
                problems.append(f"sends of room {room}: expected {json.dumps(w)}, got {json.dumps(g)}")
    finally:
        for task in abandoned:
            task.cancel()
        store.close()
        shutil.rmtree(directory, ignore_errors=True)
    fail(file, problems)
