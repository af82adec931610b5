"""Load tiktoken encodings offline (private helper of :mod:`agentmem.tokens`).

tiktoken downloads its BPE files on first use. Offline, we look for them in this order:

1. tiktoken's own cache (``TIKTOKEN_CACHE_DIR``, ``DATA_GYM_CACHE_DIR`` or its temp dir):
   tiktoken then loads the encoding itself;
2. a directory the caller names (``cache_dir=``), then the files llama-index-core ships in
   ``llama_index/core/_static/tiktoken_cache``: we read the file (sha256-checked) and build the
   encoding with tiktoken's own parameters for it;
3. tiktoken's normal download.

If all three fail we raise :class:`TokenizerUnavailableError` saying how to fix it, and never
fall back to an approximate count.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import tempfile
from pathlib import Path

import tiktoken
from tiktoken.load import load_tiktoken_bpe

from agentmem.errors import TokenizerUnavailableError

__all__ = ["load_encoding"]

_BLOB = "https://openaipublic.blob.core.windows.net/encodings/"
_ENDOFTEXT = "<|endoftext|>"
_ENDOFPROMPT = "<|endofprompt|>"

# Parameters of tiktoken_ext.openai_public for the encodings that can be loaded offline.
# tests/unit/test_tokens.py checks them against tiktoken's own encodings, token for token.
_O200K_PAT = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_CL100K_PAT = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_SPECS: dict[str, tuple[str, str, str, dict[str, int]]] = {
    "o200k_base": (
        "o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        _O200K_PAT,
        {_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018},
    ),
    "cl100k_base": (
        "cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        _CL100K_PAT,
        {
            _ENDOFTEXT: 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            _ENDOFPROMPT: 100276,
        },
    ),
}


def _tiktoken_cache_dir() -> Path:
    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if var in os.environ:
            return Path(os.environ[var])
    return Path(tempfile.gettempdir()) / "data-gym-cache"


def _llama_index_cache_dir() -> Path | None:
    try:
        spec = importlib.util.find_spec("llama_index.core")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "_static" / "tiktoken_cache"


def _cache_file(directory: Path, filename: str) -> Path:
    key = hashlib.sha1((_BLOB + filename).encode()).hexdigest()  # tiktoken's own cache key
    return directory / key


@functools.lru_cache(maxsize=16)
def load_encoding(name: str, cache_dir: str | None = None) -> tiktoken.Encoding:
    """Return the tiktoken encoding ``name``, offline when a cached file exists.

    Raises:
        TokenizerUnavailableError: The encoding is not cached anywhere and cannot be downloaded.
    """
    spec = _SPECS.get(name)
    if spec is not None:
        filename, sha256, pat_str, special = spec
        if _cache_file(_tiktoken_cache_dir(), filename).exists():
            return tiktoken.get_encoding(name)
        for directory in (Path(cache_dir) if cache_dir else None, _llama_index_cache_dir()):
            if directory is not None and (path := _cache_file(directory, filename)).exists():
                ranks = load_tiktoken_bpe(str(path), expected_hash=sha256)
                return tiktoken.Encoding(
                    name, pat_str=pat_str, mergeable_ranks=ranks, special_tokens=special
                )
    try:
        return tiktoken.get_encoding(name)
    except Exception as exc:
        msg = (
            f"cannot load the tiktoken encoding {name!r}: {type(exc).__name__}: {exc}. "
            "agentmem counts tokens exactly and does not approximate. Offline, install "
            "llama-index-core (it ships cl100k_base and o200k_base in "
            "llama_index/core/_static/tiktoken_cache), or point TIKTOKEN_CACHE_DIR (or "
            "TokenCounter(cache_dir=...)) at a directory holding tiktoken's cached files."
        )
        raise TokenizerUnavailableError(msg) from exc
