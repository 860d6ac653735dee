"""``aipool simulate``: loopback stand-ins for the four providers, and switches for their faults.

``aipool simulate`` runs the servers in the foreground; ``aipool simulate fault ollama down``,
``aipool simulate heal`` and ``aipool simulate state`` drive them from another terminal through
the simulator's admin endpoint (``POST /admin/fault``, ``POST /admin/heal``, ``GET
/admin/state``), so an outage can be started, watched and ended by hand.
"""

from __future__ import annotations

import errno
import json
from typing import Annotated, Any

import typer

from aipool.errors import PoolUnavailable
from aipool.settings import settings
from aipool.simulator import serve_forever
from aipool.simulator.faults import FAULT_KINDS, InvalidFault, make_fault
from aipool.simulator.names import (
    ADMIN_URL_ENV,
    DEFAULT_ADMIN_PORT,
    POOL_NAMES,
    UnknownProvider,
    server_kind,
)

DEFAULT_ADMIN_URL = f"http://127.0.0.1:{DEFAULT_ADMIN_PORT}"
#: The providers by the pool's names, as the commands take them.
PROVIDERS = ("ollama", "gemini", "claude", "nemotron")

HELP = "\n\n".join(
    [
        "Run loopback stand-ins for Ollama, Gemini, Claude and NVIDIA, with a fault admin "
        "endpoint.",
        "Without a subcommand: the servers in the foreground until Ctrl-C (Ollama 18434, Gemini "
        f"18435, Claude 18436, NVIDIA 18437, admin {DEFAULT_ADMIN_PORT}); they print the export "
        "lines of their URLs.",
        "From another terminal, `fault` and `heal` switch a provider's fault (`aipool simulate "
        "fault ollama down`, then `aipool simulate heal ollama`) and `state` shows each "
        f"provider's fault and calls. They call the admin endpoint at ${ADMIN_URL_ENV} (default "
        f"{DEFAULT_ADMIN_URL}), which any HTTP client can call too: POST /admin/fault with "
        '{"provider": "ollama", "kind": "down"} (and the kind\'s options, e.g. "times": 3), '
        'POST /admin/heal with {"provider": "ollama"}, GET /admin/state.',
        f"Fault kinds: {', '.join(FAULT_KINDS)}. A `hang` holds each request until healed (or "
        "--seconds), longer than any timeout of the pool.",
    ]
)

simulate_app = typer.Typer(
    help=HELP,
    invoke_without_command=True,
    no_args_is_help=False,
    rich_markup_mode=None,
    add_completion=False,
)

AdminUrl = Annotated[
    str | None,
    typer.Option(
        "--admin-url",
        help=f"The simulator's admin endpoint (default: ${ADMIN_URL_ENV}, else {DEFAULT_ADMIN_URL}).",
    ),
]


@simulate_app.callback()
def simulate(
    ctx: typer.Context,
    host: Annotated[
        str, typer.Option(help="Interface to listen on (loopback unless in a container).")
    ] = "127.0.0.1",
) -> None:
    if ctx.invoked_subcommand is not None:
        return

    try:
        serve_forever(host=host)
    except OSError as exc:
        raise PoolUnavailable(
            f"cannot listen on {host} (ports 18430, 18434-18437): {exc.strerror or exc}; "
            "is another `aipool simulate` running?"
            if exc.errno == errno.EADDRINUSE
            else f"cannot listen on {host} (ports 18430, 18434-18437): {exc.strerror or exc}"
        ) from None


def _admin_url(given: str | None) -> str:

    return (given or settings().simulator_admin_url or DEFAULT_ADMIN_URL).rstrip("/")


def _provider(name: str) -> str:
    """The pool's name of ``name`` (either spelling); a mistake in what was typed otherwise."""

    try:
        return POOL_NAMES[server_kind(name)]
    except UnknownProvider:
        raise typer.BadParameter(
            f"{name!r} is not a provider; one of {', '.join(PROVIDERS)}", param_hint="PROVIDER"
        ) from None


def _call(url: str, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    """One admin call; the simulator's own refusal is a mistake in what was typed (exit 2), no
    simulator at ``url`` a failure (exit 1)."""
    import httpx

    try:
        response = httpx.request(method, f"{url}{path}", json=body, timeout=5)
    except httpx.HTTPError as exc:
        raise PoolUnavailable(
            f"no simulator answers at {url} ({type(exc).__name__}): start one with "
            f"`aipool simulate`, or point --admin-url (or {ADMIN_URL_ENV}) at its admin endpoint"
        ) from None
    if response.status_code == 400:
        raise typer.BadParameter(str(response.json().get("error", response.text)))
    if response.status_code != 200:
        raise PoolUnavailable(f"the simulator at {url} answered {response.status_code}")
    return response.json()


def describe_fault(provider: str, fault: dict[str, Any] | None) -> str:
    """One line: the provider and its fault, as the admin endpoint reports it."""
    if not fault:
        return f"{provider}: healthy"
    options = [f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in fault.items()]
    shown = [o for o in options if not o.startswith(("kind=", "times=", "remaining="))]
    detail = f" ({', '.join(shown)})" if shown else ""
    if fault.get("kind") == "hang" and fault.get("seconds") is None:
        detail = " (each request held)"
    remaining = fault.get("remaining")
    until = (
        f" for the next {remaining} call(s)"
        if remaining is not None
        else f" until `aipool simulate heal {provider}`"
    )
    return f"{provider}: {fault['kind']}{detail}{until}"


@simulate_app.command()
def fault(
    provider: Annotated[str, typer.Argument(help=f"One of {', '.join(PROVIDERS)}.")],
    kind: Annotated[str, typer.Argument(help=f"One of {', '.join(FAULT_KINDS)}.")],
    times: Annotated[
        int | None, typer.Option(min=1, help="Only the next N calls; then healthy again.")
    ] = None,
    seconds: Annotated[
        float | None,
        typer.Option(min=0, help="hang: hold each request this long (default: until healed)."),
    ] = None,
    retry_after: Annotated[
        float | None, typer.Option(min=0, help="rate_limit: the Retry-After seconds (1).")
    ] = None,
    retry_delay: Annotated[
        float | None,
        typer.Option(
            min=0, help="rate_limited: the delay the 429 declares, the provider's way (20)."
        ),
    ] = None,
    quota: Annotated[
        str | None,
        typer.Option(help="rate_limited: the quota spent, minute or day (Gemini says which)."),
    ] = None,
    spend_limit: Annotated[
        bool | None,
        typer.Option(
            "--spend-limit", help="account_refused: the account's spend limit reached instead."
        ),
    ] = None,
    ms: Annotated[float | None, typer.Option(min=0, help="slow: milliseconds (500).")] = None,
    status: Annotated[
        int | None, typer.Option(help="overloaded, echo_key: the HTTP status to answer.")
    ] = None,
    body: Annotated[
        str | None, typer.Option(help="malformed: json (cut short) or schema (wrong shape).")
    ] = None,
    admin_url: AdminUrl = None,
) -> None:
    """Switch a simulated provider into a fault, e.g. `aipool simulate fault ollama down`."""

    name = _provider(provider)
    given = {
        "times": times,
        "seconds": seconds,
        "retry_after": retry_after,
        "retry_delay": retry_delay,
        "quota": quota,
        "spend_limit": spend_limit,
        "ms": ms,
        "status": status,
        "body": body,
    }
    options = {k: v for k, v in given.items() if v is not None}
    try:
        make_fault(kind, **options)  # what was typed is checked before any simulator is asked
    except InvalidFault as exc:
        raise typer.BadParameter(str(exc)) from None
    state = _call(
        _admin_url(admin_url), "POST", "/admin/fault", {"provider": name, "kind": kind, **options}
    )
    print(describe_fault(name, state.get("fault")))


@simulate_app.command()
def heal(
    provider: Annotated[
        str | None, typer.Argument(help="The provider to heal (default: every one).")
    ] = None,
    admin_url: AdminUrl = None,
) -> None:
    """Clear a simulated provider's fault (every provider's without PROVIDER)."""
    names = [_provider(provider)] if provider else list(PROVIDERS)
    url = _admin_url(admin_url)
    for name in names:
        state = _call(url, "POST", "/admin/heal", {"provider": name})
        print(describe_fault(name, state.get("fault")))


@simulate_app.command()
def state(
    as_json: Annotated[bool, typer.Option("--json", help="Print the state as JSON.")] = False,
    admin_url: AdminUrl = None,
) -> None:
    """Each simulated provider: its URL, whether it is up, its fault and the calls it received."""
    url = _admin_url(admin_url)
    providers = _call(url, "GET", "/admin/state")["providers"]
    rows = []
    for entry in providers.values():
        # The requests a provider received hold prompts: never printed here.
        entry = {k: v for k, v in entry.items() if k != "last_requests"}
        rows.append(entry)
    if as_json:
        print(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    for entry in rows:
        up = "up" if entry["up"] else "DOWN"
        line = describe_fault(entry["provider"], entry.get("fault"))
        print(f"{line}  [{up}, {entry['calls']} call(s), {entry['base_url']}]")


def register(app: typer.Typer) -> None:
    app.add_typer(simulate_app, name="simulate")
