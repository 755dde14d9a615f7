"""Errors: every failed call raises an ``AgentGraphError`` subclass, one per code of schemas/errors.json
(``agentgraph.errors.UnauthenticatedError``, ``RateLimitedError``, ...), after the retries the code allows, with
what happened: ``code``, ``retryable``, ``status``, ``attempts``, ``give_up_reason``, ``retry_after_ms``,
``correlation_id``. Run with a token the server does not accept: the client asks its token provider for a fresh
token once, resends, then gives up. Prints one JSON line. sdk-templates/python/tests/test_packaging.py runs it.

    python error_handling.py <GraphQL endpoint URL> <a rejected access token>
"""
from __future__ import annotations

import json
import sys

from agentgraph import AgentGraph, AgentGraphError, errors


class StaticToken:
    def __init__(self, token: str) -> None:
        self._token = token

    def get_token(self) -> str:
        return self._token

    def refresh(self) -> str:  # a real provider signs in again here
        return self._token


def main(endpoint: str, token: str) -> None:
    with AgentGraph(endpoint, token_provider=StaticToken(token)) as api:
        try:
            api.viewer()
        except errors.UnauthenticatedError as err:  # one class per error code
            print(json.dumps({"class": type(err).__name__, "code": err.code, "status": err.status,
                              "retryable": err.retryable, "attempts": err.attempts,
                              "giveUpReason": err.give_up_reason}))
        except AgentGraphError as err:  # any other code: err.code says which
            print(json.dumps({"class": type(err).__name__, "code": err.code}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
