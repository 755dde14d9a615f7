"""The sidecar's privacy settings. The sidecar must send PERSONAL fields (memory content, message bodies), so its
policy allows PERSONAL; the default detector table would then let an SSN through (the ``ssn`` detector reveals
PERSONAL data). Raw model output and context must not carry identifiers off the machine, so the sidecar's detector
table counts an SSN as SECRET: a value holding a secret or an SSN is refused before any request is built."""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Dict, Sequence

from ..detectors import DETECTORS, Detector
from ..privacy import PrivacyPolicy

#: Detector ids that the sidecar refuses even where PERSONAL fields are allowed.
STRICT_IDS = ("ssn",)

SIDECAR_DETECTORS: Sequence[Detector] = tuple(
    replace(d, data_class="SECRET") if d.id in STRICT_IDS else d for d in DETECTORS
)
SIDECAR_PRIVACY_POLICY = PrivacyPolicy(("PUBLIC", "INTERNAL", "PERSONAL"))


def sidecar_client_options() -> Dict[str, Any]:
    """Keyword arguments for ``AgentGraph(...)``/``AgentGraphClient(...)``: the sidecar's policy and detectors."""
    return {"privacy_policy": SIDECAR_PRIVACY_POLICY, "detectors": SIDECAR_DETECTORS}
