"""Executor of `intent` vectors (port of ts/intent.ts): verify pre-signed tokens with the Python verifier."""
from __future__ import annotations

import base64
import json
from typing import Any, Dict, List

import httpx
import jwt
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from agentgraph_runtime.intents import IntentVerificationError, IntentVerifier, MemoryReplayCache

from .harness import FakeClock, ScriptedRandom, fail, json_equal

JWKS_URL = "https://coordination.agentgraph.test/.well-known/jwks.json"


def _b64(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def token_problems(where: str, step: Dict[str, Any], keys: Dict[str, Any]) -> List[str]:
    """The token must be exactly what the step says it is (header, claims, signing key)."""
    problems: List[str] = []
    head, payload, signature = step["token"].split(".")
    if not json_equal(json.loads(_b64(head)), step["header"]):
        problems.append(f"{where}: the token's header is {_b64(head)!r}")
    if not json_equal(json.loads(_b64(payload)), step["claims"]):
        problems.append(f"{where}: the token's claims are {_b64(payload)!r}")
    key = keys.get(step["signedWith"])
    if key is None:
        return problems + [f"{where}: no key named {step['signedWith']!r}"]
    public = {k: v for k, v in key.items() if k != "d"}
    try:
        jwt.PyJWS().decode(step["token"], key=jwt.PyJWK(public, key["alg"]).key, algorithms=[key["alg"]])
    except Exception:  # noqa: BLE001
        problems.append(f"{where}: the token is not signed by {step['signedWith']!r}")
    if key["alg"] == "EdDSA":
        private = Ed25519PrivateKey.from_private_bytes(_b64(key["d"]))
        resigned = base64.urlsafe_b64encode(private.sign(f"{head}.{payload}".encode())).rstrip(b"=").decode()
        if resigned != signature:
            problems.append(f"{where}: re-signing with {step['signedWith']!r} (EdDSA, deterministic) gives another token")
    return problems


async def run(vector: Dict[str, Any], file: str, clock: FakeClock, random: ScriptedRandom) -> None:
    if ("jwks" in vector) == ("jwksResponses" in vector):
        raise AssertionError(f"{file}: give exactly one of jwks and jwksResponses")
    problems: List[str] = []
    responses = list(vector.get("jwksResponses", []))
    fetches = {"n": 0}

    async def fake_fetch(url: str) -> httpx.Response:
        fetches["n"] += 1
        if url != JWKS_URL:
            problems.append(f"fetch of {url}: expected {JWKS_URL}")
        if not responses:
            problems.append(f"JWKS fetch #{fetches['n']}: the vector lists {len(vector.get('jwksResponses', []))}")
            return httpx.Response(500, json={})
        nxt = responses.pop(0)
        return httpx.Response(nxt["status"], json=nxt["body"])

    cfg = vector["verifier"]
    options: Dict[str, Any] = {"jwks": vector["jwks"]} if "jwks" in vector else {"jwks_url": JWKS_URL,
                                                                                   "fetch": fake_fetch}
    verifier = IntentVerifier(
        issuer=cfg["issuer"],
        device_id=cfg["deviceId"],
        clock_skew_sec=cfg.get("clockSkewSec", 30),
        algorithms=cfg.get("algorithms", ("ES256", "EdDSA")),
        jwks_cooldown_ms=cfg.get("jwksCooldownMs", 30_000),
        jwks_max_age_ms=cfg.get("jwksMaxAgeMs", 600_000),
        replay_cache=MemoryReplayCache(),
        clock=clock,
        **options,
    )
    for index, step in enumerate(vector["steps"]):
        where = f"step {index + 1}"
        if "advance" in step:
            clock.advance(step["advance"])
            continue
        problems += token_problems(where, step["verify"], vector["keys"])
        expect = step["expect"]
        try:
            intent = await verifier.verify(step["verify"]["token"])
            got: Any = {"accepted": {
                "id": intent.id, "tenantId": intent.tenant_id, "deviceId": intent.device_id, "issuer": intent.issuer,
                "requester": intent.requester, "sequence": intent.sequence, "action": intent.action,
                "params": intent.params, "issuedAt": intent.issued_at, "notBefore": intent.not_before,
                "expiresAt": intent.expires_at, "kid": intent.kid, "alg": intent.alg,
            }}
        except IntentVerificationError as error:
            got = {"error": {"reason": error.reason, "code": error.code}}
            if "error" in expect and "retryable" in expect["error"]:
                got["error"]["retryable"] = error.retryable
        if not json_equal(expect, got):
            problems.append(f"{where}: expected {json.dumps(expect)}, got {json.dumps(got)}")
        if "jwksFetches" in step and step["jwksFetches"] != fetches["n"]:
            problems.append(f"{where}: expected {step['jwksFetches']} JWKS fetches so far, got {fetches['n']}")
    fail(file, problems)
