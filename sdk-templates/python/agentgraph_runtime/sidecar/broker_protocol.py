"""One exchange with the desktop host's token broker (sdk-templates/csharp/src/AgentGraph.Host, README "Token broker
protocol"): connect to the Unix socket, send one JSON line ``{"audience"?, "scope"?}``, read the one answer line
until the broker closes. The answer is ``{"access_token", "expires_in"}`` or ``{"error", "error_description"}``;
each broker error code maps to one exception class. Never logs, prints or stores the token."""
from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass, field
from typing import Any, Dict, Optional

#: The environment variable naming the broker's socket when no path is given.
BROKER_SOCKET_ENV = "AGENTGRAPH_BROKER_SOCKET"
#: The broker refuses longer requests; answers are small too (a JWT and a number).
MAX_REQUEST_BYTES = 4096
MAX_ANSWER_BYTES = 64 * 1024
#: The broker's own lifetime cap for a sidecar token (seconds).
MAX_EXPIRES_IN = 300

_JWT = re.compile(r"^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$")


class BrokerError(Exception):
    """The broker did not hand out a token. ``code`` is the broker's error code (or ``unavailable``/``protocol``)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class BrokerAccessDeniedError(BrokerError):
    """``access_denied``: the host does not serve this process (another user, an executable not on its list)."""


class BrokerRequestError(BrokerError):
    """``invalid_request``, ``invalid_target`` (another audience), ``invalid_scope`` (a scope the host lacks),
    ``invalid_grant`` (the host's own sign-in is no longer valid): asking again the same way will not help."""


class BrokerUnavailableError(BrokerError):
    """No answer: the socket is missing or refuses connections, the broker timed out, or identity is unreachable
    (``temporarily_unavailable``). Retrying later may help."""


class BrokerProtocolError(BrokerError):
    """The answer is not what the protocol allows (not JSON, a token that is not a JWT, a refresh token...)."""


_BY_CODE = {
    "access_denied": BrokerAccessDeniedError,
    "invalid_request": BrokerRequestError,
    "invalid_target": BrokerRequestError,
    "invalid_scope": BrokerRequestError,
    "invalid_grant": BrokerRequestError,
    "temporarily_unavailable": BrokerUnavailableError,
}

_HINTS = {
    "access_denied": "Run the sidecar as the desktop host's user with an executable on the host's allow-list.",
    "invalid_target": "Ask for the AgentGraph API audience only (leave audience unset).",
    "invalid_scope": "Ask for api:read and/or api:write only, and only what the host itself holds.",
    "invalid_grant": "The desktop host must sign in again (enrol the device).",
    "invalid_request": "Send only audience and scope, as strings.",
    "temporarily_unavailable": "The host cannot reach the identity service; retry later.",
}


@dataclass(frozen=True)
class BrokerGrant:
    """A token from the broker. ``repr`` never shows the token."""

    access_token: str = field(repr=False)
    expires_in: int


def build_request(audience: Optional[str], scope: Optional[str]) -> bytes:
    request: Dict[str, str] = {}
    if audience is not None:
        request["audience"] = audience
    if scope is not None:
        request["scope"] = scope
    line = (json.dumps(request, separators=(",", ":")) + "\n").encode("utf-8")
    if len(line) > MAX_REQUEST_BYTES:
        raise ValueError(f"The broker request is {len(line)} bytes, above its {MAX_REQUEST_BYTES}-byte limit.")
    return line


def parse_answer(raw: bytes) -> BrokerGrant:
    """The broker's answer line → a grant, or the exception its error code maps to."""
    try:
        answer: Any = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise BrokerProtocolError("protocol", "The broker's answer is not one JSON line; is the socket the host's broker?") from None
    if not isinstance(answer, dict):
        raise BrokerProtocolError("protocol", "The broker's answer is not a JSON object.")
    if "error" in answer:
        code = answer["error"] if isinstance(answer["error"], str) else "protocol"
        description = answer.get("error_description")
        detail = f": {description}" if isinstance(description, str) and description else ""
        cls = _BY_CODE.get(code, BrokerError)
        hint = _HINTS.get(code, "See the desktop host's log.")
        raise cls(code, f"The token broker refused ({code}{detail}). {hint}")
    if "refresh_token" in answer:
        raise BrokerProtocolError("protocol", "The broker sent a refresh token; a sidecar must never hold one. Refused.")
    token, expires_in = answer.get("access_token"), answer.get("expires_in")
    if not isinstance(token, str) or not _JWT.match(token):
        raise BrokerProtocolError("protocol", "The broker's answer has no access_token in JWT form.")
    if isinstance(expires_in, bool) or not isinstance(expires_in, int) or not 0 < expires_in <= MAX_EXPIRES_IN:
        raise BrokerProtocolError(
            "protocol", f"The broker's expires_in must be a whole number of seconds in 1..{MAX_EXPIRES_IN}."
        )
    return BrokerGrant(token, expires_in)


async def ask_broker(
    socket_path: str, audience: Optional[str] = None, scope: Optional[str] = None, timeout_s: float = 5.0
) -> BrokerGrant:
    """One request, one answer, within ``timeout_s`` (connect, send, read to the broker's close)."""
    request = build_request(audience, scope)

    async def exchange() -> bytes:
        reader, writer = await asyncio.open_unix_connection(socket_path, limit=MAX_ANSWER_BYTES)
        try:
            writer.write(request)
            await writer.drain()
            data = await reader.read(MAX_ANSWER_BYTES + 1)
            raw = data
            while data and len(raw) <= MAX_ANSWER_BYTES:
                data = await reader.read(MAX_ANSWER_BYTES + 1 - len(raw))
                raw += data
            if len(raw) > MAX_ANSWER_BYTES:
                raise BrokerProtocolError("protocol", f"The broker's answer exceeds {MAX_ANSWER_BYTES} bytes.")
            return raw
        finally:
            writer.close()
            try:
                await writer.wait_closed()
            except OSError:
                pass

    try:
        raw = await asyncio.wait_for(exchange(), timeout_s)
    except asyncio.TimeoutError:
        raise BrokerUnavailableError(
            "unavailable", f"The token broker did not answer within {timeout_s:g} s. Is the desktop host running?"
        ) from None
    except (FileNotFoundError, ConnectionRefusedError) as exc:
        raise BrokerUnavailableError(
            "unavailable",
            f"No token broker at {socket_path} ({type(exc).__name__}). Start the desktop host, or set "
            f"{BROKER_SOCKET_ENV} to its socket.",
        ) from None
    except PermissionError:
        raise BrokerAccessDeniedError(
            "access_denied", f"Not allowed to open {socket_path}: run the sidecar as the desktop host's user."
        ) from None
    except (ConnectionError, OSError) as exc:
        raise BrokerUnavailableError(
            "unavailable", f"The connection to the token broker failed ({type(exc).__name__}). Retry later."
        ) from None
    if not raw.endswith(b"\n"):
        raise BrokerProtocolError("protocol", "The broker closed before a complete answer line.")
    return parse_answer(raw)
