"""Every route decision held to the snapshot written before ``decide`` was made cheaper (#44).

The snapshot (``route_snapshot.jsonl.gz``, written by :mod:`tests.support.route_snapshot`) holds,
for every request of the corpus's three splits, the router tests' labelled file and a set of long
and odd texts, the whole route (intent, complexity, tier, rule, chain, confidence, the reasons),
the keyword rules' and the keyword scorer's answers and a digest of the model's features. Work
on the router's speed must leave every one of them as it is; a change meant to move decisions (a
retrained model, a new rule or threshold) rewrites the snapshot in the same commit
(``python -m tests.support.route_snapshot --write``, its docstring says when).
"""

from __future__ import annotations

from tests.support.route_snapshot import decisions, read_snapshot


def test_every_decision_is_the_snapshots() -> None:
    # Given the decisions written before the router was made cheaper
    snapshot = read_snapshot()
    # When every request is decided again with the shipped route table and model
    now = decisions()
    # Then the same requests are decided, and each exactly as before
    assert sorted(now) == sorted(snapshot)
    changed = {key: (snapshot[key], value) for key, value in now.items() if snapshot[key] != value}
    assert not changed, f"{len(changed)} decisions changed, first: {next(iter(changed.items()))}"
