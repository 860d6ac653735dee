"""Lua scripts ship as package files, and a script that needs another's work composes that file in
rather than carrying a copy of it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import fakeredis

from aipool.attempt import lifecycle
from aipool.redis.lua import LuaScripts, compose

PACKAGE = Path(lifecycle.__file__).resolve().parents[1]
#: The files attempt.lua is composed with, each becoming a local function of that name.
COMPOSED_INTO_ATTEMPT = ("acquire", "record", "refusing", "room", "reserve", "adjust")


def _defined(lua: str) -> list[str]:
    return re.findall(r"^\s*local function (\w+)\(", lua, flags=re.MULTILINE)


def test_a_composed_script_runs_the_pieces_it_is_composed_with() -> None:
    # Given: a piece that adds its two arguments, composed into a script that calls it
    source = compose("return add({}, {ARGV[1], 2})", add="return ARGV[1] + ARGV[2]")
    client = fakeredis.FakeRedis(server=fakeredis.FakeServer())
    # When
    script = LuaScripts("aipool.quota", composed={"sum": source}).for_client(client)["sum"]
    # Then
    assert script(keys=[], args=[40]) == 42


def test_no_lua_file_carries_its_own_copy_of_a_composed_piece() -> None:
    # Given: every Lua file the package ships
    files = sorted(PACKAGE.rglob("*.lua"))
    # When: the local functions each defines are listed
    copies = {
        str(f.relative_to(PACKAGE)): name
        for f in files
        for name in _defined(f.read_text(encoding="utf-8"))
        if name in COMPOSED_INTO_ATTEMPT
    }
    # Then: none defines a piece by hand; the composed attempt script defines each exactly once
    assert copies == {}
    client = fakeredis.FakeRedis(server=fakeredis.FakeServer())
    attempt = lifecycle._SCRIPTS.for_client(client)["attempt"].script
    defined = _defined(attempt)
    assert {name: defined.count(name) for name in COMPOSED_INTO_ATTEMPT} == dict.fromkeys(
        COMPOSED_INTO_ATTEMPT, 1
    )


def test_given_the_installed_redis_client_when_it_sends_a_script_then_hiredis_packs_and_parses_it(
    redis_client: Any,
) -> None:
    # The attempt script's EVALSHA carried ~40 arguments (18-30 since #44); packing them in
    # Python cost more CPU than the round trip (docs/benchmarks.md), so the pool installs hiredis
    # (pyproject.toml).
    from redis._parsers import _HiredisParser
    from redis.connection import HiredisRespSerializer

    connection = redis_client.connection_pool.get_connection()
    try:
        assert isinstance(connection._parser, _HiredisParser)
        assert isinstance(connection._command_packer, HiredisRespSerializer)
    finally:
        redis_client.connection_pool.release(connection)
