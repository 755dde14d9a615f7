"""The Python runner of the shared conformance vectors (test/conformance/README.md): one test per vector file.
A vector must validate against vector.schema.json, its id must equal its file name, and the executor of its kind
(tests/conformance/<kind>.py) must reproduce it exactly."""
from __future__ import annotations

import asyncio
import copy
import importlib
import json

import pytest

from conformance.harness import SCHEMA, VECTORS, FakeClock, ScriptedRandom
from conformance.json_schema import Validator

FILES = sorted(p.name for p in VECTORS.glob("*.json"))
VALIDATOR = Validator(json.loads(SCHEMA.read_text()))
EXECUTORS = {"call": "call", "privacy": "call", "pagination": "pagination", "outbox": "outbox", "inbox": "inbox",
             "intent": "intent"}


def test_the_suite_has_vectors() -> None:
    assert len(FILES) >= 30


def test_the_schema_rejects_malformed_vectors() -> None:
    good = json.loads((VECTORS / "call-query-success.json").read_text())
    assert VALIDATOR.errors(good) == []
    broken = [
        {**good, "kind": "calls"},
        {**good, "unknownField": 1},
        {**good, "random": [1]},
        {**good, "id": "Not An Id"},
        {**good, "expect": {"outcome": good["expect"]["outcome"]}},
        {**good, "exchanges": [{"request": {"headers": {"Idempotency-Key": "k"}}, "response": {"status": 200}}]},
        {**good, "exchanges": [{"request": {}, "response": {"fault": "dns"}}]},
        {**good, "operation": {**good["operation"], "kind": "subscription"}},
    ]
    for vector in broken:
        assert VALIDATOR.errors(copy.deepcopy(vector)) != [], json.dumps(vector)


@pytest.mark.parametrize("file", FILES)
def test_vector(file: str) -> None:
    vector = json.loads((VECTORS / file).read_text())
    problems = VALIDATOR.errors(vector)
    assert problems == [], f"{file} does not validate against vector.schema.json: {problems}"
    assert vector["id"] == file[: -len(".json")], "a vector id equals its file name"
    module = EXECUTORS.get(vector["kind"])
    assert module is not None, f"no executor for kind {vector['kind']!r}"
    executor = importlib.import_module(f"conformance.{module}")
    clock = FakeClock((vector.get("clock") or {}).get("start"))
    random = ScriptedRandom(vector.get("random", []), file)
    asyncio.run(executor.run(vector, file, clock, random))
