"""Celery's tracer in a pool worker: a re-dispatched hop costs no traceback, a failure keeps its."""

from __future__ import annotations

import traceback
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from celery import Celery, Task
from celery.app import trace
from celery.exceptions import Ignore

import workers.app  # noqa: F401  (the pool's worker wiring, the tracer's included)


@pytest.fixture()
def formatted(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every traceback formatted as text while the test runs."""
    seen: list[str] = []
    real = traceback.format_exception

    def counting(*args: Any, **kwargs: Any) -> list[str]:
        lines = real(*args, **kwargs)
        seen.append("".join(lines))
        return lines

    monkeypatch.setattr(traceback, "format_exception", counting)
    yield seen


def _trace(body: Any) -> Any:
    app = Celery("tracing-test", broker="memory://", backend="cache+memory://")
    task = app.task(bind=True, name=f"tracing.{body.__name__}")(body)
    tracer = trace.build_tracer(task.name, task, app=app, eager=False, propagate=False)
    return tracer(str(uuid.uuid4()), (), {}, {"id": "x", "delivery_info": {}})


def test_a_hop_that_is_replaced_formats_no_traceback(formatted: list[str]) -> None:
    # Given a task that ends as Task.replace ends a hop, by raising Ignore
    def replaced(self: Task) -> None:
        raise Ignore("Replaced by new task")

    # When Celery's tracer runs it in a pool worker
    retval, info, *_ = _trace(replaced)
    # Then it is ignored (the worker's parent acknowledges it) and no traceback was formatted
    assert info.state == "IGNORED"
    assert isinstance(retval.exception.exc, Ignore)
    assert formatted == []


def test_a_task_that_fails_keeps_its_traceback(formatted: list[str]) -> None:
    # Given a task with a bug
    def broken(self: Task) -> None:
        raise ZeroDivisionError("a bug")

    # When Celery's tracer runs it
    retval, info, *_ = _trace(broken)
    # Then its failure carries the whole traceback, down to the line that raised
    assert info.state == "FAILURE"
    assert "ZeroDivisionError: a bug" in retval.traceback
    assert any("in broken" in text for text in formatted)
