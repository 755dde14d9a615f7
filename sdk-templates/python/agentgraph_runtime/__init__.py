"""agentgraph runtime: the hand-written core of the generated Python SDK (docs/architecture.md#sdks)."""
from .backoff import DecorrelatedJitterBackoff, decorrelated_jitter_backoff_v2
from .call import ACCEPT, ExecuteResult, OperationSpec
from .client import AgentGraphClient, TokenProvider
from .clock import Clock, SyncClock, SystemClock, SystemSyncClock, system_clock, system_sync_clock
from .detectors import DETECTORS, Detector, detect
from .errors import (
    AgentGraphError,
    ErrorRegistry,
    InvalidResponseError,
    NetworkError,
    PrivacyError,
    PrivacyRefusal,
    TimeoutError_,
    error_class_name,
)
from .logger import JsonLogger, Logger, SilentLogger
from .privacy import DEFAULT_PRIVACY_POLICY, PrivacyPolicy, PrivacyRule, apply_privacy_gate, privacy_table
from .settings import EffectiveSettings, RetrySettings
from .sync_client import SyncAgentGraphClient, SyncTokenProvider

__all__ = [
    "ACCEPT", "AgentGraphClient", "AgentGraphError", "Clock", "DEFAULT_PRIVACY_POLICY", "DETECTORS",
    "DecorrelatedJitterBackoff", "Detector", "EffectiveSettings", "ErrorRegistry", "ExecuteResult",
    "InvalidResponseError", "JsonLogger", "Logger", "NetworkError", "OperationSpec", "PrivacyError", "PrivacyPolicy",
    "PrivacyRefusal", "PrivacyRule", "RetrySettings", "SilentLogger", "SyncAgentGraphClient", "SyncClock",
    "SyncTokenProvider", "SystemClock", "SystemSyncClock", "TimeoutError_", "TokenProvider", "apply_privacy_gate",
    "decorrelated_jitter_backoff_v2", "detect", "error_class_name", "privacy_table", "system_clock",
    "system_sync_clock",
]
