"""Where a provider is, said without what its URL may hide: the host and port alone."""

from __future__ import annotations

import pytest

from aipool.providers.endpoint import base_url_host, url_host


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("http://127.0.0.1:11434", "127.0.0.1:11434"),
        ("https://api.anthropic.com", "api.anthropic.com"),
        ("https://integrate.api.nvidia.com/v1", "integrate.api.nvidia.com"),
        # a login, a gateway's token in the path, a key in the query: none of them
        ("https://ops:s3cr3t@gateway.example:8443/t0k3n/v1?key=AIzaXYZ#x", "gateway.example:8443"),
        ("http://[::1]:8080/ollama", "[::1]:8080"),
        (" http://Ollama.Internal:11434/ ", "ollama.internal:11434"),
        # a URL that names no host (a scheme forgotten) names none, and a bad port is left out
        ("ollama:11434", ""),
        ("http://gpu-box:notaport/", "gpu-box"),
    ],
)
def test_a_url_is_named_by_its_host_and_port_alone(url: str, host: str) -> None:
    assert url_host(url) == host


def test_a_providers_host_is_that_of_its_base_url_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_BASE_URL", "http://gpu-box:11434/api")
    assert base_url_host("ollama") == "gpu-box:11434"
