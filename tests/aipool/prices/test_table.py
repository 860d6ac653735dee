"""Prices as data, merged and checked price files, and the exact cost of a call."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from aipool.cli import run
from aipool.contract.completion import Completion
from aipool.prices.table import Price, PriceFileError, completion_cost, cost_usd, load_prices
from aipool.views.cost_estimate import cost_estimate
from tests.support.cli import fresh_env, run_aipool


@pytest.fixture(autouse=True)
def _fresh_prices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AIPOOL_PRICES_FILE", raising=False)


def test_given_adr_defaults_when_pricing_calls_then_gemini_claude_paid_local_free() -> None:
    assert cost_usd("gemini", "gemini-2.5-flash", 1000, 1000) == Decimal("0.002")
    assert cost_usd("claude", "claude-sonnet-5", 500, 500) == Decimal("0.008")
    assert cost_usd("ollama", "llama3.2:3b", 10_000, 10_000) == 0
    assert cost_usd("nemotron", None, 10_000, 10_000) == 0
    assert cost_usd("static", "static", 5, 5) == 0


def test_given_a_prices_file_when_loaded_then_model_rows_override_the_provider(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given
    path = tmp_path / "prices.toml"
    path.write_text(
        "[claude]\ninput_per_1k = 0.003\noutput_per_1k = 0.015\n"
        '[claude.models."claude-haiku-4-5"]\ninput_per_1k = 0.001\noutput_per_1k = 0.005\n'
    )
    monkeypatch.setenv("AIPOOL_PRICES_FILE", str(path))
    # When / Then: the rows it names change; the rows it does not name keep the defaults
    assert cost_usd("claude", "claude-sonnet-5", 1000, 1000) == Decimal("0.018")
    assert cost_usd("claude", "claude-haiku-4-5", 1000, 1000) == Decimal("0.006")
    assert cost_usd("gemini", "any", 1000, 1000) == Decimal("0.002")


# -- merged and checked price files (issue #27, item 6) -------------------------------------------

PACKAGED = Path(__file__).parents[3] / "aipool" / "prices" / "prices.toml"


def _packaged_example() -> str:
    """prices.toml's own example row, uncommented as a reader would copy it into a file."""
    lines = PACKAGED.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('# [claude.models."'))
    return "\n".join(line.removeprefix("# ") for line in lines[start : start + 3]) + "\n"


def test_given_the_packaged_example_as_a_prices_file_when_loaded_then_only_its_row_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given: prices.toml's own example (one Claude model row) used as written
    path = tmp_path / "prices.toml"
    path.write_text(_packaged_example(), encoding="utf-8")
    monkeypatch.setenv("AIPOOL_PRICES_FILE", str(path))
    # When: priced, and ADR-006 §4's scenarios estimated
    rows = {r.scenario.name: r.total_usd for r in cost_estimate()}
    # Then: the model it names is cheaper; Gemini and every other Claude model are unchanged
    assert cost_usd("claude", "claude-haiku-4-5", 1000, 1000) == Decimal("0.006")
    assert cost_usd("claude", "claude-sonnet-5", 1000, 1000) == Decimal("0.016")
    assert cost_usd("gemini", "gemini-2.5-flash", 1000, 1000) == Decimal("0.002")
    assert rows == {
        "normal": Decimal(0),
        "light": Decimal("0.20"),
        "medium": Decimal("4.80"),
        "full": Decimal("6.00"),
    }


def test_given_an_override_of_one_key_when_loaded_then_the_other_keys_stay(
    tmp_path: Path,
) -> None:
    # Given: a file that changes Claude's output price only
    path = tmp_path / "prices.toml"
    path.write_text('[claude]\noutput_per_1k = "0.015"\n', encoding="utf-8")
    # When
    price = load_prices(str(path)).price("claude", "claude-sonnet-5")
    # Then: input and cache prices are the packaged ones, and each says where it came from
    assert (price.input_per_1k, price.output_per_1k) == (Decimal("0.008"), Decimal("0.015"))
    assert price.cache_read_per_1k == Decimal("0.0008")
    assert f"{path} (output_per_1k)" in price.origin
    assert "aipool/prices/prices.toml (input_per_1k" in price.origin


CEILING = "is above the ceiling of 10 USD per 1,000 tokens"
OUT_OF_RANGE = "must be a price from 0 to 10 USD per 1,000 tokens"


def _gemini_input(value: str) -> str:
    return f"[gemini]\ninput_per_1k = {value}\n"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            '[gemnii]\ninput_per_1k = "0.001"\n',
            "unknown provider [gemnii] (did you mean 'gemini'?)",
        ),
        (
            '[gemini]\ninput_per_1K = "0.001"\n',
            "[gemini]: unknown key 'input_per_1K' (did you mean 'input_per_1k'?)",
        ),
        (
            '[claude]\noutput_per_1k = "-0.5"\n',
            f"[claude].output_per_1k {OUT_OF_RANGE}, not '-0.5'",
        ),
        ('[claude]\noutput_per_1k = "cheap"\n', "[claude].output_per_1k must be a number"),
        (
            '[claude.models."x"]\ninput_per_1k = "0.0000000001"\n',
            "more than 9 decimals",
        ),
        ("[claude\n", "not valid TOML"),
        # Prices within reason (issue #40, item 5): "1e30" was accepted and broke cost-estimate
        (_gemini_input('"1e30"'), f"[gemini].input_per_1k = '1e30' {CEILING}"),
        (_gemini_input('"1e400"'), f"[gemini].input_per_1k = '1e400' {CEILING}"),
        (_gemini_input("1e400"), f"[gemini].input_per_1k = 1E+400 {CEILING}"),
        (_gemini_input('"10.000000001"'), CEILING),
        (_gemini_input("15"), CEILING),
        (_gemini_input("inf"), f"[gemini].input_per_1k {OUT_OF_RANGE}, not Infinity"),
        (_gemini_input('"-inf"'), f"[gemini].input_per_1k {OUT_OF_RANGE}, not '-inf'"),
        (_gemini_input("nan"), f"[gemini].input_per_1k {OUT_OF_RANGE}, not NaN"),
        (_gemini_input('"sNaN"'), f"[gemini].input_per_1k {OUT_OF_RANGE}, not 'sNaN'"),
        (_gemini_input('"1e-400"'), "[gemini].input_per_1k = '1e-400' has more than 9 decimals"),
        # A misspelt kind of price is matched with the kinds ("inptu" is far from input_per_1k)
        ('[gemini]\ninptu = "0"\n', "unknown key 'inptu' (did you mean 'input_per_1k'?)"),
        ('[gemini]\nouptut = "0"\n', "unknown key 'ouptut' (did you mean 'output_per_1k'?)"),
        (
            '[claude.models."x"]\ncache_reed = "0"\n',
            "unknown key 'cache_reed' (did you mean 'cache_read_per_1k'?)",
        ),
    ],
)
def test_given_a_bad_prices_file_when_loaded_then_one_line_names_the_file_and_key(
    tmp_path: Path, content: str, expected: str
) -> None:
    # Given
    path = tmp_path / "prices.toml"
    path.write_text(content, encoding="utf-8")
    # When / Then
    with pytest.raises(PriceFileError) as refused:
        load_prices(str(path))
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ") and expected in message


def test_given_a_bad_prices_file_when_any_command_starts_then_it_stops_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given: a misspelt provider in AIPOOL_PRICES_FILE
    path = tmp_path / "prices.toml"
    path.write_text('[gemnii]\ninput_per_1k = "0.001"\n', encoding="utf-8")
    monkeypatch.setenv("AIPOOL_PRICES_FILE", str(path))
    # When
    code = run(["cost-estimate"])
    # Then: exit 1, one line naming the variable, the file and the provider; nothing else
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    assert err.strip() == (
        f"aipool: settings refused: AIPOOL_PRICES_FILE: {path}: unknown provider [gemnii] "
        "(did you mean 'gemini'?); known: ollama, nemotron, gemini, claude"
    )


# -- prices within reason (issue #40, item 5) -----------------------------------------------------


def test_given_prices_at_the_bounds_when_loaded_then_they_are_kept_in_one_form(
    tmp_path: Path,
) -> None:
    # Given the ceiling itself, and zeros written with odd exponents
    path = tmp_path / "prices.toml"
    path.write_text(
        '[gemini]\ninput_per_1k = "1E+1"\noutput_per_1k = "0e400"\ncache_read_per_1k = "0E-99"\n',
        encoding="utf-8",
    )
    # When
    price = load_prices(str(path)).price("gemini")
    # Then: accepted as 10 and 0, and shown that way
    assert (str(price.input_per_1k), str(price.output_per_1k)) == ("10", "0")
    assert str(price.cache_read_per_1k) == "0"
    assert price.cost(1_000_000, 1_000_000) == Decimal(10_000)


@pytest.mark.parametrize(
    ("args", "value", "says"),
    [
        (["cost-estimate"], '"1e30"', f"[gemini].input_per_1k = '1e30' {CEILING}"),
        (["cost-estimate"], "1e400", f"[gemini].input_per_1k = 1E+400 {CEILING}"),
        (["cost-estimate"], "nan", f"[gemini].input_per_1k {OUT_OF_RANGE}, not NaN"),
        (["cost-estimate"], '"-1"', f"[gemini].input_per_1k {OUT_OF_RANGE}, not '-1'"),
        (["config"], "inf", f"[gemini].input_per_1k {OUT_OF_RANGE}, not Infinity"),
        (["worker"], '"1e400"', f"[gemini].input_per_1k = '1e400' {CEILING}"),
    ],
)
def test_given_a_price_out_of_reason_when_a_command_runs_then_it_stops_in_one_line(
    tmp_path: Path, args: list[str], value: str, says: str
) -> None:
    # Given an absurd price in AIPOOL_PRICES_FILE
    path = tmp_path / "prices.toml"
    path.write_text(_gemini_input(value), encoding="utf-8")
    env = fresh_env(tmp_path / "runtime", AIPOOL_PRICES_FILE=str(path))
    # When the real console script runs (cost-estimate priced 1e30 with an internal error)
    done = run_aipool(args, env, tmp_path)
    # Then: exit 1, one line naming the variable, the file and the key; no traceback, no output
    assert done.returncode == 1, done.stderr
    assert done.stdout == "" and "Traceback" not in done.stderr
    line = done.stderr.strip()
    assert "\n" not in line
    assert line.startswith(f"aipool: settings refused: AIPOOL_PRICES_FILE: {path}: {says}")


def test_given_a_misspelt_key_when_cost_estimate_runs_then_it_suggests_the_key_meant(
    tmp_path: Path,
) -> None:
    path = tmp_path / "prices.toml"
    path.write_text('[gemini]\ninptu = "0.001"\n', encoding="utf-8")
    env = fresh_env(tmp_path / "runtime", AIPOOL_PRICES_FILE=str(path))
    done = run_aipool(["cost-estimate"], env, tmp_path)
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert f"{path}: [gemini]: unknown key 'inptu' (did you mean 'input_per_1k'?)" in done.stderr


# -- billed tokens of every kind (issue #27, item 4) ----------------------------------------------


def test_given_thinking_tokens_in_the_output_when_priced_then_they_cost_output() -> None:
    # Given: the three Gemini answers of 11 input, 7 output and 1,000 thinking tokens,
    # as the adapter reports them (thinking folded into the output)
    answers = [
        Completion(
            "ok", "gemini-2.5-flash", input_tokens=11, output_tokens=1007, thinking_tokens=1000
        )
        for _ in range(3)
    ]
    # When
    total = sum((completion_cost("gemini", c) for c in answers), Decimal(0))
    # Then: $0.003054 for 3,054 tokens, not $0.000054 for 54
    assert total == Decimal("0.003054")
    assert sum(c.input_tokens + c.output_tokens for c in answers) == 3054


def test_given_cache_writes_and_reads_when_priced_then_each_at_its_own_rate() -> None:
    # Given: a Claude prompt of 10,000 tokens: 2,000 written to the cache, 7,000 read from it
    completion = Completion(
        "ok",
        "claude-sonnet-5",
        input_tokens=10_000,
        output_tokens=500,
        cache_write_tokens=2_000,
        cache_read_tokens=7_000,
    )
    # When
    cost = completion_cost("claude", completion)
    # Then: 1,000 at $0.008, 2,000 at $0.01, 7,000 at $0.0008 and 500 at $0.008 per 1K
    assert cost == Decimal("0.008") + Decimal("0.02") + Decimal("0.0056") + Decimal("0.004")


def test_given_a_model_row_with_its_own_input_price_then_its_cache_costs_that_price(
    tmp_path: Path,
) -> None:
    path = tmp_path / "prices.toml"
    path.write_text('[claude.models."claude-haiku-4-5"]\ninput_per_1k = "0.001"\n')
    price = load_prices(str(path)).price("claude", "claude-haiku-4-5")
    assert price.cost(1000, 0, cache_read_tokens=1000) == Decimal("0.001")


def test_given_a_cheap_call_when_priced_then_its_cost_is_exact() -> None:
    # Given: Gemini Flash-Lite's $0.075 per million input tokens
    price = Price(Decimal("0.000075"), Decimal("0.0003"))
    # When / Then: 11 tokens cost $0.000000825, not a rounded $0.000001
    assert price.cost(11, 0) == Decimal("0.000000825")
