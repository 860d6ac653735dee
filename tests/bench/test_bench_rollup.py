"""The roll-up benchmark loads rows the ledger of today accepts (bench/bench_rollup.py).

It broke once unnoticed: a migration made ``journey_id`` required, the bench's bulk insert did not
name it, and ``bench/run`` stopped at the roll-up figure without writing any figure at all.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.engine import make_url

from aipool.ledger.testing import ledger_engine
from bench.bench_rollup import MEASURED_DAY, _load, _time_rollup

DATABASE = "{}_bench_rollup".format(
    make_url(
        os.environ.get(
            "AIPOOL_TEST_DATABASE_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/aipool_test"
        )
    ).database
)


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    engine = ledger_engine(DATABASE)
    yield engine
    engine.dispose()


def test_the_bench_loads_rows_the_migrated_ledger_accepts_and_rolls_up_its_day(
    engine: Engine,
) -> None:
    # When the bench loads 200 rows over the two days around the measured one, as it loads its
    # million
    _load(engine, 200, MEASURED_DAY, 2)
    # Then every row is in the ledger, each with its journey, and the measured day rolls up
    with engine.connect() as conn:
        rows, journeys = conn.execute(
            text("SELECT count(*), count(journey_id) FROM ai_usage_logs")
        ).one()
    assert rows == journeys == 200
    numbers = _numbers(engine)
    _seconds, day_rows = _time_rollup(engine)
    assert day_rows == 100
    # And they are numbered as a drain numbers one write of its rows, so the roll-up rewrites
    # none of them (rewriting a million rows doubled the heap: 11.6x the small table's roll-up)
    assert numbers == _numbers(engine)
    assert len(numbers) == 1 and None not in numbers


def _numbers(engine: Engine) -> set[int | None]:
    with engine.connect() as conn:
        return set(conn.execute(text("SELECT DISTINCT ledger_seq FROM ai_usage_logs")).scalars())
