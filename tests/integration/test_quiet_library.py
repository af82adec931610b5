"""The library prints nothing: loading and using the real local model is silent.

Runs in a subprocess, so stdout and stderr are the process's own (sentence-transformers and
transformers write to them directly, out of reach of ``capsys``).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.processes import child_env, run_python

pytestmark = pytest.mark.integration

SCRIPT = textwrap.dedent(
    """
    import logging
    from transformers.utils import logging as hf_logging

    def app_hook(factory, args, kwargs):  # an application's own hook must survive our load
        return factory(*args, **kwargs)

    hf_logging.set_tqdm_hook(app_hook)
    from agentmem.embeddings import default_embedder
    from agentmem.long_term import LongTermMemory

    embedder = default_embedder()
    assert len(embedder.embed_query("tabs, not spaces")) == 384
    memory = LongTermMemory.open(user_id="alice")
    memory.store_memory("Alice indents with tabs", "semantic")
    assert memory.retrieve_memories("indentation?")[0].record.content == "Alice indents with tabs"
    memory.close()
    assert hf_logging._tqdm_hook is app_hook, hf_logging._tqdm_hook
    assert logging.getLogger("agentmem").handlers == []
    """
)


def test_model_load_and_use_write_nothing_to_stdout_or_stderr(tmp_path: Path) -> None:
    env = child_env(drop=("OPENAI_", "TQDM_", "HF_"), AGENTMEM_HOME=str(tmp_path / "home"))
    done = run_python("-c", SCRIPT, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert done.stderr == ""
