"""Idempotency keys: one per logical call, sent unchanged on every attempt as the ``idempotencyKey`` variable and the
``Idempotency-Key`` header. A caller that must survive restarts (the outbox) makes and persists the key itself."""
from __future__ import annotations

import uuid
from typing import Any, Callable, Optional

IDEMPOTENCY_KEY_VARIABLE = "idempotencyKey"
IDEMPOTENCY_KEY_HEADER = "Idempotency-Key"


def random_key() -> str:
    return str(uuid.uuid4())


def resolve_idempotency_key(from_options: Optional[str], from_variables: Any, new_key: Callable[[], str]) -> str:
    variable_key = from_variables if isinstance(from_variables, str) and from_variables else None
    if from_options is not None and variable_key is not None and from_options != variable_key:
        raise ValueError(
            "The call got two different idempotency keys (idempotency_key= and the idempotencyKey variable). Pass one."
        )
    key = from_options or variable_key or new_key()
    if not isinstance(key, str) or not key:
        raise ValueError("The idempotency key must be a non-empty string.")
    return key
