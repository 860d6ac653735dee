"""What a call costs: a price table per provider and model, read on every priced hop.

Prices are data: ``aipool/prices/prices.toml`` (the defaults) **merged** with the file named in
``AIPOOL_PRICES_FILE``, which changes only the rows and keys it names; a model row's unset keys are
its provider's (but a model row with an input price of its own and no cache prices pays its input
price for cache tokens: the provider's cache prices are fractions of the provider's input price).
Every price is USD per 1,000 tokens:

- ``input_per_1k`` and ``output_per_1k``: prompt and answer tokens. Output includes what the
  provider bills as output without showing it: Gemini 2.5's thinking tokens, OpenAI-style
  reasoning tokens, Claude's extended thinking (the adapters fold them in, so the quota counts
  the same number).
- ``cache_write_per_1k`` and ``cache_read_per_1k``: prompt tokens written to or read from the
  provider's prompt cache (Claude's cache writes and reads, Gemini's and OpenAI's cached input),
  which are part of the prompt but billed apart; unset, they cost the input price.
- ``cache_write_1h_per_1k``: the cache writes kept an hour instead of five minutes (Anthropic's
  1-hour cache, 2x the input price where a 5-minute write is 1.25x); unset, the cache-write price.

A file is checked whole when loaded: an unknown provider or key (with the closest known one
suggested), a value that is not a number, a price below 0 or above :data:`MAX_PRICE_PER_1K`
(infinity and NaN included), or more than nine decimals (costs are exact to a picodollar) raise
:class:`PriceFileError`, one line naming the file and the key; workers and every ``aipool``
command stop on it at start (:mod:`aipool.settings.startup`). The ceiling keeps every cost the
pool computes exact: a call's cost stays far inside the 28 digits :mod:`decimal` works to and the
ledger's ``Numeric(24, 12)`` column (a price of ``1e30`` per 1K was once accepted, and broke every
priced view). A provider without a row (the static answer, the refusal) costs nothing. Money is
``Decimal`` throughout, and a call's cost is exact: rounded only when shown.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from functools import cache
from pathlib import Path
from typing import Any

from aipool.providers.catalog import PROVIDERS

_DEFAULT_FILE = Path(__file__).with_name("prices.toml")
_THOUSAND = Decimal(1000)
#: Costs are kept to a picodollar (10^-12 USD), as the ledger stores them.
PICO = Decimal("0.000000000001")
#: Costs are shown to a millionth of a dollar.
MICRO = Decimal("0.000001")
#: The keys a price row may set.
PRICE_KEYS = (
    "input_per_1k",
    "output_per_1k",
    "cache_write_per_1k",
    "cache_read_per_1k",
    "cache_write_1h_per_1k",
)
#: At most this many decimals per 1,000 tokens keeps every cost exact to a picodollar.
MAX_DECIMALS = 9
#: The dearest price a file may set, USD per 1,000 tokens ($10,000 per million): above every
#: price any provider has published (the dearest, OpenAI's o1-pro output, is $0.60 per 1K), and
#: low enough that a price per million written where one per 1K belongs is refused once it
#: exceeds $10 (Claude Opus's $15 per million input, say).
MAX_PRICE_PER_1K = Decimal(10)


class PriceFileError(ValueError):
    """A price file that cannot be used; the message names the file and the key."""


@dataclass(frozen=True)
class Price:
    """USD per 1,000 tokens of each kind a provider bills; ``origin`` says which file set what."""

    input_per_1k: Decimal
    output_per_1k: Decimal
    cache_write_per_1k: Decimal | None = None
    cache_read_per_1k: Decimal | None = None
    cache_write_1h_per_1k: Decimal | None = None
    origin: str = ""

    def cost(
        self,
        input_tokens: int,
        output_tokens: int,
        cache_write_tokens: int = 0,
        cache_read_tokens: int = 0,
        cache_write_1h_tokens: int = 0,
    ) -> Decimal:
        """Exact cost of one call. ``input_tokens`` is the whole prompt, cache writes and reads
        included (the pool's convention); those are priced at their own rates, and of the
        writes, ``cache_write_1h_tokens`` at the 1-hour rate."""
        write = min(cache_write_tokens, input_tokens)
        hour = min(cache_write_1h_tokens, write)
        read = min(cache_read_tokens, input_tokens - write)
        cw = self.input_per_1k if self.cache_write_per_1k is None else self.cache_write_per_1k
        cw1h = cw if self.cache_write_1h_per_1k is None else self.cache_write_1h_per_1k
        cr = self.input_per_1k if self.cache_read_per_1k is None else self.cache_read_per_1k
        raw = (
            self.input_per_1k * (input_tokens - write - read)
            + cw * (write - hour)
            + cw1h * hour
            + cr * read
            + self.output_per_1k * output_tokens
        ) / _THOUSAND
        return raw.quantize(PICO)


FREE = Price(Decimal(0), Decimal(0), origin="no price row: free")

#: A row as files set it: each key's value and the file it came from.
_Row = dict[str, tuple[Decimal, str]]


def _price(*rows: _Row) -> Price:
    """The price of rows applied in order (a provider's, then its model's)."""
    merged: _Row = {}
    for row in rows:
        merged.update(row)
    values: dict[str, Any] = {key: value for key, (value, _) in merged.items()}
    values.setdefault("input_per_1k", Decimal(0))
    values.setdefault("output_per_1k", Decimal(0))
    by_file: dict[str, list[str]] = {}
    for key, (_, source) in merged.items():
        by_file.setdefault(source, []).append(key)
    if len(by_file) == 1:
        origin = next(iter(by_file))
    else:
        origin = "; ".join(f"{source} ({', '.join(keys)})" for source, keys in by_file.items())
    return Price(**values, origin=origin)


@dataclass(frozen=True)
class PriceTable:
    """Provider rows plus per-model rows, each key remembering the file that set it."""

    providers: dict[str, _Row]
    models: dict[tuple[str, str], _Row] = field(default_factory=dict)
    #: The files merged into this table, defaults first.
    files: tuple[str, ...] = ()

    #: Prices already merged, by (provider, model): a table never changes once read (a changed
    #: file is a new table), and every hop prices each hop of its chain.
    _merged: dict[tuple[str, str | None], Price] = field(
        default_factory=dict, compare=False, repr=False
    )

    def price(self, provider: str, model: str | None = None) -> Price:
        """The model's own row over its provider's (unset keys are the provider's), else the
        provider's, else free."""
        key = (provider, model)
        merged = self._merged.get(key)
        if merged is None:
            merged = self._merged[key] = self._merge(provider, model)
        return merged

    def _merge(self, provider: str, model: str | None) -> Price:
        if provider not in self.providers and (provider, model) not in self.models:
            return FREE
        if model is not None and (provider, model) in self.models:
            own = self.models[(provider, model)]
            inherited = dict(self.providers.get(provider, {}))
            if "input_per_1k" in own:
                # The provider's cache prices are fractions of its own input price: a model with
                # an input price of its own and no cache prices pays its input price for them.
                for key in ("cache_write_per_1k", "cache_read_per_1k", "cache_write_1h_per_1k"):
                    inherited.pop(key, None)
            return _price(inherited, own)
        return _price(self.providers[provider])


_PER_1K = "_per_1k"


def _closest(word: str, known: tuple[str, ...]) -> str:
    # deferred like load_prices' import: pydantic-settings only when a file is wrong
    from aipool.settings.names import closest

    # A price key is "<kind>_per_1k"; a misspelt kind ("inptu") is compared with the kinds, as
    # against the whole key it falls below difflib's cutoff.
    kinds = {key.removesuffix(_PER_1K): key for key in known if key.endswith(_PER_1K)}
    match = closest(word, known) or kinds.get(closest(word.removesuffix(_PER_1K), kinds) or "")
    return f" (did you mean {match!r}?)" if match else ""


def _shown_value(value: Any) -> str:
    # A TOML float arrives as a Decimal (see _read_toml): shown as written, not as Decimal('...').
    return str(value) if isinstance(value, Decimal) else repr(value)


def _amount(value: Any, where: str) -> Decimal:
    problem = f"{where} must be a number of USD per 1,000 tokens, not {value!r}"
    if isinstance(value, bool) or not isinstance(value, str | int | float | Decimal):
        raise PriceFileError(problem)
    try:
        amount = Decimal(str(value).strip())
    except InvalidOperation:
        raise PriceFileError(problem) from None
    if not amount.is_finite() or amount < 0:
        raise PriceFileError(
            f"{where} must be a price from 0 to {MAX_PRICE_PER_1K} USD per 1,000 tokens, "
            f"not {_shown_value(value)}"
        )
    if amount > MAX_PRICE_PER_1K:
        raise PriceFileError(
            f"{where} = {_shown_value(value)} is above the ceiling of {MAX_PRICE_PER_1K} USD per "
            "1,000 tokens (prices here are per 1,000 tokens: a price per million is 1,000 times smaller)"
        )
    canonical = amount.normalize()
    exponent = canonical.as_tuple().exponent
    if isinstance(exponent, int) and -exponent > MAX_DECIMALS:
        raise PriceFileError(
            f"{where} = {_shown_value(value)} has more than {MAX_DECIMALS} decimals (costs are "
            "kept to a picodollar)"
        )
    # One form per value, whatever exponent it was written with: "0e400" is 0 and "1E+1" is 10,
    # in costs and in what cost-estimate shows.
    return (
        canonical.quantize(Decimal(1)) if isinstance(exponent, int) and exponent > 0 else canonical
    )


def _row(section: Any, where: str, source: str, *, models_allowed: bool) -> _Row:
    if not isinstance(section, dict):
        raise PriceFileError(f"{where} must be a table of prices, not {section!r}")
    allowed = (*PRICE_KEYS, "models") if models_allowed else PRICE_KEYS
    values: _Row = {}
    for key, value in section.items():
        if key == "models" and models_allowed:
            continue
        if key not in allowed:
            raise PriceFileError(
                f"{where}: unknown key {key!r}{_closest(key, allowed)}; known: {', '.join(allowed)}"
            )
        values[key] = (_amount(value, f"{where}.{key}"), source)
    return values


def merge_prices(base: PriceTable, data: dict[str, Any], source: str) -> PriceTable:
    """``base`` with the rows of parsed TOML ``data`` (read from ``source``) applied: each key a
    row names replaces that key only. Raises :class:`PriceFileError` naming ``source`` and the
    offending key."""
    providers = {p: dict(row) for p, row in base.providers.items()}
    models = {k: dict(row) for k, row in base.models.items()}
    for provider, section in data.items():
        if provider not in PROVIDERS:
            raise PriceFileError(
                f"{source}: unknown provider [{provider}]{_closest(provider, PROVIDERS)}; "
                f"known: {', '.join(PROVIDERS)}"
            )
        where = f"{source}: [{provider}]"
        providers.setdefault(provider, {}).update(_row(section, where, source, models_allowed=True))
        rows = section.get("models", {}) if isinstance(section, dict) else {}
        if not isinstance(rows, dict):
            raise PriceFileError(f"{where}.models must be a table of model rows")
        for model, row in rows.items():
            models.setdefault((provider, model), {}).update(
                _row(row, f'{source}: [{provider}.models."{model}"]', source, models_allowed=False)
            )
    return PriceTable(providers, models, (*base.files, source))


def parse_prices(data: dict[str, Any], source: str = "prices") -> PriceTable:
    """Build a table from parsed TOML alone (see ``prices.toml`` for the layout)."""
    return merge_prices(PriceTable({}), data, source)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            # Decimal keeps "0.001" exact when a file writes prices as TOML floats.
            return tomllib.load(fh, parse_float=Decimal)
    except OSError as exc:
        raise PriceFileError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise PriceFileError(f"{path}: not valid TOML ({exc})") from None


def load_prices(path: str | None = None) -> PriceTable:
    """The packaged defaults merged with ``path``, else with ``AIPOOL_PRICES_FILE`` (if set).

    Raises :class:`PriceFileError` for a file that cannot be used.
    """
    if path is None:
        # deferred: loads pydantic-settings (~346 ms of start-up) only when this runs
        from aipool.settings import settings

        configured = settings().prices_file
        path = str(configured) if configured else None
    return _read_prices(path)


@cache
def _read_prices(path: str | None) -> PriceTable:
    # Read once per file and process: every priced hop asks.
    table = merge_prices(PriceTable({}), _read_toml(_DEFAULT_FILE), _shown(_DEFAULT_FILE))
    if path is not None and Path(path).resolve() != _DEFAULT_FILE.resolve():
        table = merge_prices(table, _read_toml(Path(path)), path)
    return table


def _shown(path: Path) -> str:
    return "aipool/prices/prices.toml" if path == _DEFAULT_FILE else str(path)


def cost_usd(
    provider: str,
    model: str | None,
    input_tokens: int,
    output_tokens: int,
    prices: PriceTable | None = None,
) -> Decimal:
    """Exact USD cost of one call whose prompt is priced as plain input."""
    return (prices or load_prices()).price(provider, model).cost(input_tokens, output_tokens)


def completion_cost(provider: str, completion: Any, prices: PriceTable | None = None) -> Decimal:
    """Exact USD cost of a :class:`~aipool.contract.completion.Completion`, its prompt-cache writes and reads
    at their own prices (thinking and reasoning tokens are already in its output)."""
    price = (prices or load_prices()).price(provider, completion.model)
    return price.cost(
        completion.input_tokens,
        completion.output_tokens,
        getattr(completion, "cache_write_tokens", 0),
        getattr(completion, "cache_read_tokens", 0),
        getattr(completion, "cache_write_1h_tokens", 0),
    )
