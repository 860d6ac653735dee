"""The delay proxy puts Redis a network away: every request waits, answers come back in order."""

from __future__ import annotations

import statistics
import time
from urllib.parse import urlsplit

import redis

from bench.delay_proxy import answer_kind, commands, started
from tests.conftest import TEST_REDIS_URL


def test_every_request_through_the_proxy_waits_its_delay_and_is_answered_in_order() -> None:
    # Given a proxy to the test Redis that holds every request 5 ms
    direct = urlsplit(TEST_REDIS_URL)
    with started(f"{direct.hostname}:{direct.port}", 5.0) as port:
        client = redis.Redis(host=direct.hostname, port=port, db=int(direct.path.strip("/") or 0))
        try:
            # When commands are sent one at a time
            took = []
            for i in range(10):
                began = time.perf_counter()
                assert client.echo(f"m{i}") == f"m{i}".encode()
                took.append((time.perf_counter() - began) * 1000)
            # Then each waited at least the delay
            assert min(took) >= 5.0, took
            # And a pipeline written at once waits the delay once, its answers in order
            pipe = client.pipeline(transaction=False)
            for i in range(50):
                pipe.echo(f"p{i}")
            began = time.perf_counter()
            answers = pipe.execute()
            assert answers == [f"p{i}".encode() for i in range(50)]
            assert (time.perf_counter() - began) * 1000 < 5.0 * 10 + statistics.median(took)
        finally:
            client.close()


def test_the_log_names_each_command_on_its_connection_and_never_a_value(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # Given a proxy to the test Redis writing its log
    direct = urlsplit(TEST_REDIS_URL)
    log = tmp_path / "proxy.log"
    with started(f"{direct.hostname}:{direct.port}", 1.0, log) as port:
        client = redis.Redis(host=direct.hostname, port=port, db=int(direct.path.strip("/") or 0))
        try:
            # When a client sets a key, reads it back and sends a pipeline
            client.set("aipool:bench:proxy-log", "a value never logged", ex=5)
            assert client.get("aipool:bench:proxy-log") == b"a value never logged"
            pipe = client.pipeline(transaction=False)
            pipe.exists("aipool:bench:a").ttl("aipool:bench:b").execute()
        finally:
            client.close()
    lines = [line.split("\t") for line in log.read_text().splitlines()]
    # Then each write is logged as it arrives, with its commands and their keys, and each answer
    # as it comes back, on the connection the client opened
    holds = [fields[4] for fields in lines if fields[2] == "hold"]
    assert "SET aipool:bench:proxy-log" in holds
    assert "GET aipool:bench:proxy-log" in holds
    assert "EXISTS aipool:bench:a | TTL aipool:bench:b" in holds
    assert {fields[2] for fields in lines} >= {"open", "hold", "sent", "back"}
    assert len({fields[1] for fields in lines}) == 1
    # And no value a command carried, nor an answer's content
    assert "never logged" not in log.read_text()


def test_a_command_split_over_two_writes_is_named_once_complete() -> None:
    # Given a SET arriving in two pieces
    whole = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nvalue\r\n*1\r\n$4\r\nPING\r\n"
    # When the first piece is read, then the rest with it
    first, rest = commands(whole[:20])
    then, left = commands(rest + whole[20:])
    # Then the command is named when its last byte is in
    assert (first, then, left) == ([], ["SET k", "PING"], b"")


def test_an_answer_is_named_by_its_kind_and_first_word_never_its_content() -> None:
    assert answer_kind(b"+OK\r\n") == "+OK"
    assert answer_kind(b":0\r\n:-2\r\n") == ":0"
    assert answer_kind(b"$12\r\nsecret value\r\n") == "$"
    assert answer_kind(b">3\r\n$7\r\nmessage\r\n$4\r\nchan\r\n$3\r\nhi!\r\n") == "> message"
    assert answer_kind(b"*2\r\n$6\r\nollama\r\n$5\r\nbody!\r\n") == "* ollama"
    assert answer_kind(b"*2\r\n_\r\n:1\r\n") == "*"
