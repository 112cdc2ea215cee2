"""The stand-in provider of a judge panel's session: it names the panel (its label is the
panel's spec) and carries the first judge's settings. It sends nothing itself: the judges
of the panel are asked through their own sessions (`LLMSession.members()`)."""

from __future__ import annotations

from collections.abc import Sequence

from rubricflow.errors import ConfigurationError
from rubricflow.llm.base import LLMProvider, ProviderRequest, ProviderResponse, redact
from rubricflow.llm.panel import Panel

__all__ = ["PanelProvider"]


class PanelProvider(LLMProvider):
    """The panel as one provider, for what asks a session about its judge (label,
    settings); `providers` are the judges' own providers, in the panel's order."""

    kind = "panel"
    structured_feature = "each judge's own"

    def __init__(self, panel: Panel, providers: Sequence[LLMProvider]) -> None:
        super().__init__(panel.policy, settings=providers[0].settings)
        self.panel = panel
        self.providers = tuple(providers)

    @property
    def label(self) -> str:
        members = " | ".join(provider.label for provider in self.providers)
        return redact(f"panel:{self.panel.policy}({members})")

    @property
    def identity(self) -> str:
        return self.label

    async def _send(self, request: ProviderRequest, timeout: float) -> ProviderResponse:
        raise ConfigurationError(
            "a judge panel is asked through its judges' sessions (LLMSession.members()), "
            "not as one provider"
        )
