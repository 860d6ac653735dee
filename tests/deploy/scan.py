"""The scanners CI runs (``make scan``), held to a reviewed baseline.

- checkov on every overlay under ``deploy/overlays``, as ``kubectl kustomize`` renders it: what an
  operator applies, images by digest and all.
- bandit on the pool's packages (what the image ships), at medium severity and above; its low
  findings (``assert``, ``random``, ``subprocess``) are printed, never gating.

Every finding accepted after review is an entry of ``deploy/scan-baseline.toml``, with its reason.
A finding no entry covers fails the scan, and so does an entry that covers nothing any more: the
baseline shrinks with the findings. The scanners run from their own venv (``.venv-scan``, from
``requirements-scan.lock``): checkov pins its dependencies apart from the pool's.

    python -m tests.deploy.scan [--scanners .venv-scan/bin]
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BASELINE = ROOT / "deploy/scan-baseline.toml"
OVERLAYS = ROOT / "deploy/overlays"
#: What the image ships, as bandit scans it.
PACKAGES = ("aipool", "workers", "tasks", "schedules", "celeryconfig.py")
GATING_SEVERITIES = ("MEDIUM", "HIGH")
TOOLS = ("checkov", "bandit")


@dataclass(frozen=True)
class Finding:
    """One failed check: which tool, which check, and where (a resource, or a file)."""

    tool: str
    check: str
    where: str

    def __str__(self) -> str:
        return f"{self.tool} {self.check} at {self.where}"


@dataclass(frozen=True)
class Accepted:
    """A baseline entry: findings of ``check`` wherever ``where`` (a glob) matches, ``count`` of
    them when given (bandit names files, so a second finding in one file is a new one)."""

    tool: str
    check: str
    where: str
    reason: str
    count: int | None = None

    def covers(self, finding: Finding) -> bool:
        """Whether this entry is about ``finding``."""
        return (finding.tool, finding.check) == (self.tool, self.check) and fnmatch.fnmatchcase(
            finding.where, self.where
        )

    def __str__(self) -> str:
        return f"{self.tool} {self.check} at {self.where}"


@dataclass
class Verdict:
    """What a scan found against the baseline."""

    accepted: list[Finding]
    new: list[Finding]
    stale: list[Accepted]

    @property
    def passed(self) -> bool:
        """No finding outside the baseline and no entry left over."""
        return not self.new and not self.stale


def load_baseline(path: Path = BASELINE) -> list[Accepted]:
    """The baseline's entries; ``ValueError`` naming the first one without a tool, check, place
    or reason."""
    with path.open("rb") as f:
        data = tomllib.load(f)
    entries = []
    for tool in data:
        if tool not in TOOLS:
            raise ValueError(f"{path.name}: [[{tool}]] is no scanner of make scan ({TOOLS})")
    for tool in TOOLS:
        for raw in data.get(tool, []):
            entry = Accepted(
                tool,
                str(raw.get("check", "")),
                str(raw.get("where", "")),
                str(raw.get("reason", "")).strip(),
                raw.get("count"),
            )
            if not (entry.check and entry.where and entry.reason):
                raise ValueError(f"{path.name}: [[{tool}]] {raw} needs check, where and reason")
            entries.append(entry)
    return entries


def judge(findings: Iterable[Finding], baseline: list[Accepted]) -> Verdict:
    """Sort ``findings`` into accepted and new, and name the entries that covered none."""
    verdict = Verdict([], [], [])
    used: dict[Accepted, int] = {}
    for finding in findings:
        entry = next((e for e in baseline if e.covers(finding)), None)
        if entry is None or (entry.count is not None and used.get(entry, 0) >= entry.count):
            verdict.new.append(finding)
            continue
        used[entry] = used.get(entry, 0) + 1
        verdict.accepted.append(finding)
    verdict.stale = [e for e in baseline if used.get(e, 0) < (e.count or 1)]
    return verdict


def checkov_findings(report: dict[str, Any] | list[dict[str, Any]]) -> list[Finding]:
    """The failed checks of a checkov JSON report (one framework or several)."""
    reports = report if isinstance(report, list) else [report]
    return [
        Finding("checkov", c["check_id"], c["resource"])
        for r in reports
        for c in r["results"]["failed_checks"]
    ]


def bandit_findings(report: dict[str, Any], root: Path = ROOT) -> list[Finding]:
    """The gating findings of a bandit JSON report (medium severity and above), by file."""
    found = []
    for result in report["results"]:
        if result["issue_severity"] in GATING_SEVERITIES:
            path = Path(result["filename"])
            where = path.resolve().relative_to(root).as_posix() if path.is_absolute() else path
            found.append(Finding("bandit", result["test_id"], str(where)))
    return found


def render_overlays(directory: Path) -> list[Path]:
    """Every overlay under ``deploy/overlays`` rendered into ``directory``, one file each."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        raise RuntimeError("kubectl is not installed (it renders the overlays)")
    rendered = []
    for overlay in sorted(p.parent for p in OVERLAYS.glob("*/kustomization.yaml")):
        out = subprocess.run(
            [kubectl, "kustomize", str(overlay)], capture_output=True, text=True, check=True
        )
        path = directory / f"{overlay.name}.yaml"
        path.write_text(out.stdout, encoding="utf-8")
        rendered.append(path)
    return rendered


def run_checkov(scanners: Path) -> tuple[dict[str, Any], list[Finding]]:
    """checkov's summary and failed checks over the rendered overlays."""
    with tempfile.TemporaryDirectory(prefix="aipool-scan-") as directory:
        files = render_overlays(Path(directory))
        argv = [str(scanners / "checkov"), "--framework", "kubernetes", "--skip-download"]
        argv += ["--quiet", "--compact", "-o", "json"]
        for path in files:
            argv += ["-f", str(path)]
        # checkov exits 1 when a check fails: the report says which, and the baseline decides
        out = subprocess.run(argv, capture_output=True, text=True, check=False)
    if out.returncode not in (0, 1):
        raise RuntimeError(f"checkov failed: {out.stderr.strip()[-2000:]}")
    report = json.loads(out.stdout)
    summary = report["summary"] if isinstance(report, dict) else report[0]["summary"]
    return summary, checkov_findings(report)


def run_bandit(scanners: Path) -> tuple[dict[str, Any], list[Finding]]:
    """bandit's metrics totals and gating findings over the pool's packages."""
    argv = [str(scanners / "bandit"), "-q", "-r", *PACKAGES, "-f", "json"]
    out = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
    if out.returncode not in (0, 1):
        raise RuntimeError(f"bandit failed: {out.stderr.strip()[-2000:]}")
    report = json.loads(out.stdout)
    return report["metrics"]["_totals"], bandit_findings(report)


def main(argv: list[str] | None = None) -> int:
    """Run both scanners, judge them against the baseline, print what is new or stale."""
    parser = argparse.ArgumentParser(prog="python -m tests.deploy.scan")
    parser.add_argument("--scanners", type=Path, default=ROOT / ".venv-scan/bin")
    args = parser.parse_args(argv)
    baseline = load_baseline()
    summary, checkov = run_checkov(args.scanners)
    totals, bandit = run_bandit(args.scanners)
    verdict = judge([*checkov, *bandit], baseline)
    print(
        f"scan: checkov {summary['checkov_version']} on the overlays: {summary['passed']} checks "
        f"pass, {summary['failed']} fail; bandit on {', '.join(PACKAGES)}: "
        f"{int(totals['SEVERITY.HIGH'])} high, {int(totals['SEVERITY.MEDIUM'])} medium, "
        f"{int(totals['SEVERITY.LOW'])} low (low is not gating); "
        f"{len(verdict.accepted)} accepted in {BASELINE.relative_to(ROOT)}"
    )
    for finding in verdict.new:
        print(f"scan: new finding, fix it or add it to the baseline with its reason: {finding}")
    for entry in verdict.stale:
        print(f"scan: the baseline accepts what no longer occurs, remove it: {entry}")
    return 0 if verdict.passed else 1


if __name__ == "__main__":
    sys.exit(main())
