"""A real Prometheus server (Debian's ``prometheus`` package) of the test's own, on loopback.

It scrapes the given targets every second, with the workers' metrics token
(:data:`tests.support.metrics.TOKEN`, from a file as compose gives it), and evaluates the given
rule files every second, with its data in a temporary directory removed when it stops.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import yaml

from tests.support.metrics import TOKEN
from tests.support.services import free_port
from tests.support.waiting import eventually


class PrometheusServer:
    """``prometheus`` scraping ``targets`` (host:port) as job ``job``, with ``rule_files``."""

    def __init__(
        self, targets: Sequence[str], rule_files: Sequence[Path], job: str = "aipool-workers"
    ) -> None:
        self.port = free_port()
        self.directory = Path(tempfile.mkdtemp(prefix="aipool-prometheus-"))
        self.config = self.directory / "prometheus.yml"
        token_file = self.directory / "metrics_token"
        token_file.write_text(TOKEN)
        self.config.write_text(
            yaml.safe_dump(
                {
                    "global": {
                        "scrape_interval": "1s",
                        "scrape_timeout": "1s",
                        "evaluation_interval": "1s",
                    },
                    "rule_files": [str(path) for path in rule_files],
                    "scrape_configs": [
                        {
                            "job_name": job,
                            "authorization": {
                                "type": "Bearer",
                                "credentials_file": str(token_file),
                            },
                            "static_configs": [{"targets": list(targets)}],
                        }
                    ],
                }
            )
        )
        self.log_path = self.directory / "prometheus.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.url = f"http://127.0.0.1:{self.port}"

    def start(self) -> PrometheusServer:
        """Start the server and wait until it is ready to answer queries."""
        binary = shutil.which("prometheus")
        if binary is None:
            raise RuntimeError("prometheus is missing: apt-get install -y prometheus")
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [
                    binary,
                    f"--config.file={self.config}",
                    f"--storage.tsdb.path={self.directory / 'data'}",
                    f"--web.listen-address=127.0.0.1:{self.port}",
                    "--log.level=warn",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        eventually(self._ready, 30.0, f"prometheus on port {self.port}", interval=0.1)
        return self

    def query(self, expr: str) -> list[dict[str, Any]]:
        """The instant vector ``expr`` evaluates to now."""
        return list(self._api("query", query=expr)["result"])

    def value(self, expr: str) -> float | None:
        """The single value of ``expr`` now, or ``None`` when it has no result."""
        result = self.query(expr)
        return float(result[0]["value"][1]) if result else None

    def alerts(self) -> list[dict[str, Any]]:
        """Every alert pending or firing now (``/api/v1/alerts``)."""
        return list(self._api("alerts")["alerts"])

    def last_evaluation(self, group: str) -> str:
        """When the rule group ``group`` was last evaluated (RFC 3339, Prometheus's clock)."""
        groups = self._api("rules")["groups"]
        (found,) = [g for g in groups if g["name"] == group]
        return str(found["lastEvaluation"])

    def log(self) -> str:
        """The end of the server's log."""
        return self.log_path.read_text(errors="replace")[-3000:]

    def stop(self) -> None:
        """Stop the server and remove its data."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.directory, ignore_errors=True)

    def _api(self, path: str, **params: str) -> Any:
        response = httpx.get(f"{self.url}/api/v1/{path}", params=params, timeout=5)
        response.raise_for_status()
        body = response.json()
        assert body["status"] == "success", body
        return body["data"]

    def _ready(self) -> bool:
        if self.process is not None and self.process.poll() is not None:
            raise RuntimeError(f"prometheus exited: {self.log()}")
        try:
            return httpx.get(f"{self.url}/-/ready", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False
