"""make scan's judge (tests/deploy/scan.py): a finding outside the reviewed baseline fails, and so
does a baseline entry that covers nothing any more."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.deploy.scan import (
    ROOT,
    Accepted,
    Finding,
    bandit_findings,
    checkov_findings,
    judge,
    load_baseline,
)

PULL_POLICY = Accepted("checkov", "CKV_K8S_15", "Deployment.aipool.*", "pinned by digest")
MIGRATION = Accepted("bandit", "B608", "aipool/ledger/m.py", "constant table names", count=2)


def _checkov_report(*failed: tuple[str, str]) -> dict[str, object]:
    return {
        "summary": {"passed": 10, "failed": len(failed)},
        "results": {"failed_checks": [{"check_id": c, "resource": r} for c, r in failed]},
    }


def test_given_findings_the_baseline_accepts_when_judged_then_the_scan_passes() -> None:
    # Given checkov's report of two deployments failing an accepted check
    report = _checkov_report(
        ("CKV_K8S_15", "Deployment.aipool.aipool-beat"),
        ("CKV_K8S_15", "Deployment.aipool.aipool-flower"),
    )
    # When judged against a baseline accepting it for every deployment
    verdict = judge(checkov_findings(report), [PULL_POLICY])
    # Then both are accepted and nothing is new
    assert verdict.passed
    assert len(verdict.accepted) == 2


def test_given_a_new_finding_when_judged_then_the_scan_fails_naming_it() -> None:
    # Given a secret taken through env, which no entry accepts
    report = _checkov_report(
        ("CKV_K8S_15", "Deployment.aipool.aipool-beat"),
        ("CKV_K8S_35", "Deployment.aipool.aipool-health"),
    )
    # When judged
    verdict = judge(checkov_findings(report), [PULL_POLICY])
    # Then the scan fails on exactly that finding
    assert not verdict.passed
    assert [str(f) for f in verdict.new] == [
        "checkov CKV_K8S_35 at Deployment.aipool.aipool-health"
    ]


def test_given_more_findings_in_a_file_than_the_baseline_counts_when_judged_then_one_is_new() -> (
    None
):
    # Given a third string-built query in a file whose two were reviewed
    findings = [Finding("bandit", "B608", "aipool/ledger/m.py")] * 3
    # When judged
    verdict = judge(findings, [MIGRATION])
    # Then the third is new
    assert len(verdict.accepted) == 2 and len(verdict.new) == 1 and not verdict.passed


def test_given_an_entry_whose_finding_went_away_when_judged_then_the_scan_fails_naming_it() -> None:
    # Given a baseline that still accepts a finding the code no longer has
    verdict = judge([Finding("bandit", "B608", "aipool/ledger/m.py")], [MIGRATION, PULL_POLICY])
    # Then both entries are stale: one covers fewer findings than it counts, one covers none
    assert verdict.stale == [MIGRATION, PULL_POLICY] and not verdict.passed


def test_given_bandit_findings_when_read_then_only_medium_and_high_gate_by_file() -> None:
    report = {
        "results": [
            {"issue_severity": "LOW", "test_id": "B101", "filename": "aipool/a.py"},
            {"issue_severity": "MEDIUM", "test_id": "B608", "filename": "aipool/b.py"},
            {"issue_severity": "HIGH", "test_id": "B602", "filename": str(ROOT / "aipool/c.py")},
        ]
    }
    assert bandit_findings(report) == [
        Finding("bandit", "B608", "aipool/b.py"),
        Finding("bandit", "B602", "aipool/c.py"),
    ]


def test_given_an_entry_without_a_reason_when_loaded_then_the_baseline_is_refused(
    tmp_path: Path,
) -> None:
    baseline = tmp_path / "baseline.toml"
    baseline.write_text('[[checkov]]\ncheck = "CKV_K8S_35"\nwhere = "*"\nreason = " "\n')
    with pytest.raises(ValueError, match="needs check, where and reason"):
        load_baseline(baseline)


def test_given_the_reviewed_baseline_when_loaded_then_no_secret_or_tag_finding_is_accepted() -> (
    None
):
    # The bar: secrets through env (CKV_K8S_35) and images by tag (CKV_K8S_43) are fixed,
    # never accepted
    entries = load_baseline()
    assert entries
    assert not {e.check for e in entries} & {"CKV_K8S_35", "CKV_K8S_43"}
    assert all(len(e.reason) > 40 for e in entries)
