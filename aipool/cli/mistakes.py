"""How a failed command ends: one line on stderr and an exit code (2: what was typed is wrong;
1: the command could not do its job)."""

from __future__ import annotations

from aipool.errors import AipoolError, InvalidRequest

USER_MISTAKE = 2
FAILURE = 1


def exit_code_for(exc: BaseException) -> int:
    """2 for a malformed request, 1 for anything else that went wrong."""
    return USER_MISTAKE if isinstance(exc, InvalidRequest) else FAILURE


def _flat(text: str) -> str:
    return " ".join(text.split())


def one_line(exc: BaseException, *, debug: bool = False) -> str:
    """The message for ``exc``, on one line."""
    if isinstance(exc, InvalidRequest):
        return f"aipool: invalid request ({exc.code}): {_flat(str(exc))}"
    if isinstance(exc, AipoolError):
        return f"aipool: {_flat(str(exc))}"
    if type(exc).__module__.startswith(("redis", "kombu")):
        return f"aipool: cannot reach Redis: {type(exc).__name__}: {_flat(str(exc))}"
    if type(exc).__module__.startswith("sqlalchemy"):
        detail = str(getattr(exc, "orig", None) or exc).splitlines()[0]
        return f"aipool: cannot read the ledger: {type(exc).__name__}: {_flat(detail)}"
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {exc.filename}" if exc.filename else ""
        return f"aipool: {exc.strerror}{where}"
    hint = "" if debug else " (run with --debug for the traceback)"
    return f"aipool: internal error: {type(exc).__name__}: {_flat(str(exc))}{hint}"
