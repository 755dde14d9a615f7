"""The Python sidecar's side of the desktop host: tokens only from the host's broker, a stricter privacy
gate. ``BrokeredTokenProvider`` is the SDK's token provider; ``sidecar_client_options()`` the client settings."""
from .broker_protocol import (
    BROKER_SOCKET_ENV,
    BrokerAccessDeniedError,
    BrokerError,
    BrokerGrant,
    BrokerProtocolError,
    BrokerRequestError,
    BrokerUnavailableError,
    ask_broker,
)
from .credentials import BrokeredTokenProvider
from .privacy import SIDECAR_DETECTORS, SIDECAR_PRIVACY_POLICY, sidecar_client_options

__all__ = [
    "BROKER_SOCKET_ENV", "BrokerAccessDeniedError", "BrokerError", "BrokerGrant", "BrokerProtocolError",
    "BrokerRequestError", "BrokerUnavailableError", "BrokeredTokenProvider", "SIDECAR_DETECTORS",
    "SIDECAR_PRIVACY_POLICY", "ask_broker", "sidecar_client_options",
]
