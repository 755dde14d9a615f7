"""Intent verification (port of sdk-templates/typescript/src/intents, docs/architecture.md#an-intents-path): a compact JWS signed by the
platform, checked with PyJWT + cryptography before the device acts on it. In order (the same order as jose's
jwtVerify, so every SDK gives the same reason):

 1. shape: three base64url parts, a JSON header                                   -> MALFORMED
 2. ``alg`` in the allow-list (ES256, EdDSA)                                       -> ALG_NOT_ALLOWED
 3. a key with that ``kid`` (no kid -> MALFORMED; a remote JWKS is refetched once) -> UNKNOWN_KID
 4. the signature                                                                  -> FORGED_SIGNATURE
 5. header ``typ`` = intent+jwt                                                    -> WRONG_TYP
 6. required claims: jti, iat, nbf, exp, tid, seq, action, aud, iss                -> MISSING_CLAIM
 7. ``iss``, then ``aud`` (this device)                                            -> WRONG_ISSUER / WRONG_AUDIENCE
 8. time with ``clock_skew_sec``: nbf not in the future, exp not passed, iat not in the future
                                                                                   -> NOT_YET_VALID / EXPIRED
 9. claim types (jti, tid, action non-empty strings; seq a non-negative integer; params an object)
                                                                                   -> INVALID_CLAIM
10. ``jti`` unseen (remembered until exp + skew; only verified intents enter)      -> REPLAYED
"""
from __future__ import annotations

import base64
import binascii
import json
import sqlite3
import threading
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Dict, List, Mapping, Optional, Sequence

import httpx
import jwt
from jwt.exceptions import InvalidSignatureError, PyJWKError

from .clock import Clock, system_clock
from .errors import AgentGraphError

INTENT_TYP = "intent+jwt"
DEFAULT_INTENT_ALGORITHMS = ("ES256", "EdDSA")
REQUIRED_INTENT_CLAIMS = ("jti", "iat", "nbf", "exp", "tid", "seq", "action")
RETRYABLE_REASONS = {"JWKS_UNAVAILABLE"}


class IntentVerificationError(AgentGraphError):
    """Why an intent was refused; ``code`` is ``INTENT_<reason>``. The message never holds the token."""

    def __init__(self, reason: str, message: str, claim: Optional[str] = None) -> None:
        super().__init__(f"INTENT_{reason}", f"Intent refused ({reason}): {message}", reason in RETRYABLE_REASONS)
        self.reason = reason
        self.claim = claim


@dataclass
class VerifiedIntent:
    id: str
    tenant_id: str
    device_id: str
    issuer: str
    requester: Optional[str]
    sequence: int
    action: str
    params: Dict[str, Any]
    issued_at: int
    not_before: int
    expires_at: int
    kid: str
    alg: str
    claims: Dict[str, Any] = field(default_factory=dict)


class MemoryReplayCache:
    def __init__(self) -> None:
        self._seen: Dict[str, float] = {}

    async def remember(self, jti: str, keep_until: float, now: float) -> bool:
        for key in [k for k, until in self._seen.items() if until <= now]:
            del self._seen[key]
        if jti in self._seen:
            return False
        self._seen[jti] = keep_until
        return True


class SqliteReplayCache:
    """A replay cache that survives restarts (a cache that forgets lets a captured intent run twice)."""

    def __init__(self, path: str) -> None:
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._lock = threading.Lock()
        self._db.execute("CREATE TABLE IF NOT EXISTS intent_replay (jti TEXT PRIMARY KEY, keep_until REAL NOT NULL)")

    async def remember(self, jti: str, keep_until: float, now: float) -> bool:
        with self._lock:
            self._db.execute("DELETE FROM intent_replay WHERE keep_until <= ?", (now,))
            cur = self._db.execute(
                "INSERT INTO intent_replay (jti, keep_until) VALUES (?, ?) ON CONFLICT (jti) DO NOTHING",
                (jti, keep_until),
            )
            return cur.rowcount == 1

    def close(self) -> None:
        self._db.close()


def _b64decode(part: str) -> bytes:
    if any(c in part for c in "+/="):
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


_KTY_FOR_ALG = {"ES256": ("EC", "P-256"), "ES384": ("EC", "P-384"), "ES512": ("EC", "P-521"), "EdDSA": ("OKP", None)}


def _matches(jwk: Mapping[str, Any], kid: str, alg: str) -> bool:
    """jose's createLocalJWKSet selection: same kid, a key type usable with alg, alg (if given) equal, use sig."""
    if jwk.get("kid") != kid:
        return False
    if "alg" in jwk and jwk["alg"] != alg:
        return False
    if jwk.get("use", "sig") != "sig":
        return False
    kty, crv = _KTY_FOR_ALG.get(alg, (None, None))
    if jwk.get("kty") != kty:
        return False
    if crv is not None and jwk.get("crv") != crv:
        return False
    if kty == "OKP" and jwk.get("crv") not in ("Ed25519", "Ed448"):
        return False
    return True


def _is_key_set(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("keys"), list) and all(
        isinstance(k, dict) for k in value["keys"]
    )


JwksFetch = Callable[[str], Awaitable[httpx.Response]]


class IntentKeySet:
    """A JWKS given as data, or fetched from a URL and cached: an unknown kid triggers one refetch (not within
    ``cooldown_ms`` of the last fetch); a cached set older than ``max_age_ms`` is refetched."""

    def __init__(
        self,
        *,
        jwks: Optional[Mapping[str, Any]] = None,
        jwks_url: Optional[str] = None,
        fetch: Optional[JwksFetch] = None,
        clock: Clock = system_clock,
        cooldown_ms: float = 30_000,
        max_age_ms: float = 600_000,
    ) -> None:
        if (jwks is None) == (jwks_url is None):
            raise ValueError("IntentKeySet: give exactly one of jwks (a key set) or jwks_url.")
        self._keys: Optional[List[Dict[str, Any]]] = None
        if jwks is not None:
            if not _is_key_set(jwks):
                raise ValueError("IntentKeySet: jwks must be {keys: [JWK, ...]}.")
            if any("d" in k for k in jwks["keys"]):
                raise ValueError('IntentKeySet: jwks holds a private key (a "d" member); give the public keys only.')
            self._keys = list(jwks["keys"])
        self._url = jwks_url
        self._fetch = fetch
        self._clock = clock
        self._cooldown = cooldown_ms
        self._max_age = max_age_ms
        self._fetched_at: Optional[float] = None
        self.fetches = 0

    def _age(self) -> float:
        return float("inf") if self._fetched_at is None else self._clock.now() - self._fetched_at

    def _find(self, kid: str, alg: str) -> Optional[Dict[str, Any]]:
        found = [k for k in (self._keys or []) if _matches(k, kid, alg)]
        if len(found) > 1:
            raise IntentVerificationError("JWKS_UNAVAILABLE", "the key set has several keys for this kid and alg.")
        return found[0] if found else None

    def _unknown(self, kid: str, alg: str) -> IntentVerificationError:
        where = f"JWKS at {self._url}" if self._url else "given key set"
        return IntentVerificationError("UNKNOWN_KID", f'no key "{kid}" for {alg} in the {where}.')

    async def key_for(self, kid: Any, alg: str) -> Dict[str, Any]:
        if not isinstance(kid, str) or not kid:
            raise IntentVerificationError("MALFORMED", "the header has no kid; intents name their signing key.")
        fetched_now = False
        if self._url is not None and (self._keys is None or self._age() > self._max_age):
            await self._refresh()
            fetched_now = True
        key = self._find(kid, alg)
        if key is not None:
            return key
        if self._url is None or fetched_now or self._age() < self._cooldown:
            raise self._unknown(kid, alg)
        await self._refresh()
        key = self._find(kid, alg)
        if key is None:
            raise self._unknown(kid, alg)
        return key

    async def _refresh(self) -> None:
        url = self._url
        assert url is not None
        self.fetches += 1
        self._fetched_at = self._clock.now()
        try:
            if self._fetch is not None:
                response = await self._fetch(url)
            else:
                async with httpx.AsyncClient() as client:
                    response = await client.get(url, headers={"accept": "application/json"})
            if not 200 <= response.status_code <= 299:
                raise RuntimeError(f"HTTP {response.status_code}")
            body = response.json()
        except Exception as cause:  # noqa: BLE001 - every fetch failure is the same refusal
            raise IntentVerificationError("JWKS_UNAVAILABLE", f"fetching {url} failed ({cause}).") from None
        if not _is_key_set(body):
            raise IntentVerificationError("JWKS_UNAVAILABLE", f'{url} did not return a JWKS ({{"keys": [...]}}).')
        self._keys = list(body["keys"])


def _normalize_typ(value: str) -> str:
    value = value.lower()
    return value[len("application/"):] if value.startswith("application/") else value


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


class IntentVerifier:
    def __init__(
        self,
        *,
        issuer: str,
        device_id: str,
        replay_cache: Any,
        jwks: Optional[Mapping[str, Any]] = None,
        jwks_url: Optional[str] = None,
        fetch: Optional[JwksFetch] = None,
        clock: Clock = system_clock,
        clock_skew_sec: int = 30,
        algorithms: Sequence[str] = DEFAULT_INTENT_ALGORITHMS,
        jwks_cooldown_ms: float = 30_000,
        jwks_max_age_ms: float = 600_000,
    ) -> None:
        if not issuer:
            raise ValueError("IntentVerifier: issuer is required.")
        if not device_id:
            raise ValueError("IntentVerifier: device_id is required.")
        self.issuer = issuer
        self.device_id = device_id
        self._replay = replay_cache
        self._clock = clock
        self._skew = clock_skew_sec
        self._algorithms = list(algorithms)
        self.key_set = IntentKeySet(
            jwks=jwks, jwks_url=jwks_url, fetch=fetch, clock=clock, cooldown_ms=jwks_cooldown_ms,
            max_age_ms=jwks_max_age_ms,
        )

    async def verify(self, token: str) -> VerifiedIntent:
        parts = token.split(".") if isinstance(token, str) else []
        if len(parts) != 3:
            raise IntentVerificationError("MALFORMED", "not a compact JWS (three base64url parts).")
        try:
            header = json.loads(_b64decode(parts[0]))
            if not isinstance(header, dict):
                raise ValueError("header is not an object")
        except (ValueError, binascii.Error):
            raise IntentVerificationError("MALFORMED", "the protected header does not decode.") from None
        alg = header.get("alg")
        if not isinstance(alg, str) or not alg:
            raise IntentVerificationError("MALFORMED", 'the header has no "alg".')
        if alg not in self._algorithms:
            raise IntentVerificationError("ALG_NOT_ALLOWED", f'"alg" {alg} is not allowed.')
        now = self._clock.now()
        jwk = await self.key_set.key_for(header.get("kid"), alg)
        try:
            key = jwt.PyJWK(jwk, alg).key
        except (PyJWKError, ValueError, KeyError) as exc:
            raise IntentVerificationError("MALFORMED", f"the key for this kid is not usable ({exc}).") from None
        try:
            payload_bytes = jwt.PyJWS().decode(token, key=key, algorithms=[alg])
        except InvalidSignatureError:
            raise IntentVerificationError("FORGED_SIGNATURE", "the signature does not verify with the named key.") \
                from None
        except jwt.exceptions.PyJWTError as exc:
            raise IntentVerificationError("MALFORMED", f"the JWS does not decode ({type(exc).__name__}).") from None
        typ = header.get("typ")
        if not isinstance(typ, str) or _normalize_typ(typ) != INTENT_TYP:
            raise IntentVerificationError("WRONG_TYP", f'header "typ" must be {INTENT_TYP}.', "typ")
        try:
            claims = json.loads(payload_bytes)
        except ValueError:
            raise IntentVerificationError("MALFORMED", "the claims are not JSON.") from None
        if not isinstance(claims, dict):
            raise IntentVerificationError("MALFORMED", "the claims are not a JSON object.")
        for claim in (*REQUIRED_INTENT_CLAIMS, "aud", "iss"):
            if claim not in claims:
                raise IntentVerificationError("MISSING_CLAIM", f'missing required "{claim}" claim.', claim)
        if claims["iss"] != self.issuer:
            raise IntentVerificationError("WRONG_ISSUER", 'unexpected "iss" claim value.', "iss")
        aud = claims["aud"]
        audiences = aud if isinstance(aud, list) else [aud]
        if self.device_id not in audiences:
            raise IntentVerificationError("WRONG_AUDIENCE", 'unexpected "aud" claim value.', "aud")
        now_sec = int(now // 1000)
        for claim in ("iat", "nbf", "exp"):
            if not _is_number(claims[claim]):
                raise IntentVerificationError("INVALID_CLAIM", f'"{claim}" claim must be a number.', claim)
        if claims["nbf"] > now_sec + self._skew:
            raise IntentVerificationError("NOT_YET_VALID", '"nbf" claim timestamp check failed.', "nbf")
        if claims["exp"] <= now_sec - self._skew:
            raise IntentVerificationError("EXPIRED", '"exp" claim timestamp check failed.', "exp")
        if claims["iat"] > now_sec + self._skew:
            raise IntentVerificationError("NOT_YET_VALID", '"iat" is in the future.', "iat")
        for claim in ("jti", "tid", "action"):
            if not isinstance(claims[claim], str) or not claims[claim]:
                raise IntentVerificationError("INVALID_CLAIM", f'"{claim}" must be a non-empty string.', claim)
        seq = claims["seq"]
        if not _is_int(seq) or seq < 0 or seq > 2**53 - 1:
            raise IntentVerificationError("INVALID_CLAIM", '"seq" must be a non-negative integer.', "seq")
        params = claims.get("params")
        if params is not None and not isinstance(params, dict):
            raise IntentVerificationError("INVALID_CLAIM", '"params" must be an object.', "params")
        if "params" in claims and params is None:
            raise IntentVerificationError("INVALID_CLAIM", '"params" must be an object.', "params")
        keep_until = (claims["exp"] + self._skew) * 1000
        if not await self._replay.remember(claims["jti"], keep_until, now):
            raise IntentVerificationError("REPLAYED", f"intent {claims['jti']} was already accepted.", "jti")
        sub = claims.get("sub")
        return VerifiedIntent(
            id=claims["jti"],
            tenant_id=claims["tid"],
            device_id=self.device_id,
            issuer=self.issuer,
            requester=sub if isinstance(sub, str) else None,
            sequence=seq,
            action=claims["action"],
            params=params or {},
            issued_at=claims["iat"] * 1000,
            not_before=claims["nbf"] * 1000,
            expires_at=claims["exp"] * 1000,
            kid=header["kid"],
            alg=alg,
            claims=claims,
        )
