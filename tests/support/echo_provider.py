"""A sixth provider for the "Adding a provider" walkthrough: an adapter that answers in-process."""

from __future__ import annotations

from aipool.contract.completion import Completion
from aipool.contract.request import Request


class EchoProvider:
    """Answers every request with the model's name and the number of turns it was sent."""

    name = "echo"

    def complete(
        self,
        request: Request,
        model: str,
        *,
        timeout_s: float | None = None,
        thinking_budget: int | None = None,
    ) -> Completion:
        return Completion(
            text=f"{model} read {len(request.messages)} turn(s)",
            model=model,
            input_tokens=7,
            output_tokens=3,
        )

    def close(self) -> None:
        pass
