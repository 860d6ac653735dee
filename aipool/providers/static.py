"""The end of every chain: an answer the pool gives without any model (ADR-006 priority 4)."""

from __future__ import annotations

from aipool.contract.completion import Completion
from aipool.contract.request import Request
from aipool.settings import settings


class StaticProvider:
    """Returns the configured apology (general chain) or a refusal (tool chain); never fails."""

    name = "static"

    def __init__(self, *, refuse: bool = False) -> None:
        self.refuse = refuse
        self.name = "refuse" if refuse else "static"

    def close(self) -> None:
        return None

    def complete(
        self,
        request: Request,
        model: str,
        *,
        timeout_s: float | None = None,
        thinking_budget: int | None = None,
    ) -> Completion:
        s = settings()
        text = s.refusal_message if self.refuse else s.static_answer
        return Completion(text=text, model=self.name, finish_reason=self.name)
