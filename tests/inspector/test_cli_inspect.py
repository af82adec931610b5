"""``agentmem inspect``: a home no process holds, served until interrupted; the URL with
its token is the first line on stdout."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from agentmem import MemoryService
from agentmem.cli import main
from agentmem.embeddings import ALL_MINILM_L6_V2
from tests.fake_embedder import HashingEmbedder
from tests.processes import run_python

pytestmark = pytest.mark.integration


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    # Stands in for the default model the command uses (its identity: the name), unloaded.
    stand_in = HashingEmbedder(384, model_name=ALL_MINILM_L6_V2)
    with MemoryService.open(home, embedder=stand_in) as service:
        service.long_term("alice").store_memory("Alice <b>likes</b> tea", "semantic")
    return home


def _start(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "agentmem.cli", "inspect", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_inspect_prints_its_url_first_and_serves_until_interrupted(tmp_path: Path) -> None:
    home = _home(tmp_path)
    proc = _start("--home", str(home), "--port", "0", "--no-browser")
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        assert "/?token=" in url
        page = urllib.request.urlopen(url.replace("/?", "/u/alice/memories?"), timeout=60)
        assert "Alice &lt;b&gt;likes&lt;/b&gt; tea" in page.read().decode()
        bare = url.split("?")[0]
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(bare, timeout=60)
        assert refused.value.code == 401
        # The home is held: another process cannot open it meanwhile.
        held = run_python(
            "-m", "agentmem.cli", "--home", str(home), "stats", "--user", "alice", timeout=120
        )
        assert held.returncode == 1
        assert "another process" in held.stderr
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Serving" in err
    assert "read-only" in err


def test_inspect_with_a_fixed_port_and_a_start_user(tmp_path: Path) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = _start(
        "--home", str(_home(tmp_path)), "--port", str(port), "--no-browser", "--user", "alice"
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith(f"http://127.0.0.1:{port}/u/alice?token=")
        assert "User alice" in urllib.request.urlopen(url, timeout=60).read().decode()
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)


def test_inspect_refuses_a_home_without_memories_or_a_bad_port(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", "--home", str(tmp_path / "none"), "--no-browser"]) == 1
    assert "no memories in" in capsys.readouterr().err
    assert main(["inspect", "--home", str(_home(tmp_path)), "--port", "99999", "--no-browser"]) == 1
    assert "--port must be from 0 to 65535" in capsys.readouterr().err
    assert not (tmp_path / "none").exists()  # nothing created
