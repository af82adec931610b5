"""Bm25Encoder: English and Chinese terms, stable hashed indices, edge cases."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentmem.errors import ConfigurationError, InvalidValueError
from agentmem.long_term.store import SparseVector
from agentmem.sparse import Bm25Encoder, SparseEncoder


@pytest.fixture(scope="module")
def bm25() -> Bm25Encoder:
    return Bm25Encoder()


def terms(vector: SparseVector) -> set[int]:
    return set(vector.indices)


def test_is_a_sparse_encoder(bm25: Bm25Encoder) -> None:
    assert isinstance(bm25, SparseEncoder)


def test_chinese_query_shares_terms_with_a_mixed_document(bm25: Bm25Encoder) -> None:
    doc = bm25.encode_documents(["我用 Python 写代码，缩进用制表符"])[0]
    query = bm25.encode_query("Python 缩进")
    assert len(query.indices) == 2  # "python" and "缩进", not one token for the sentence
    assert terms(query) <= terms(doc)


def test_chinese_is_segmented_into_words(bm25: Bm25Encoder) -> None:
    doc = terms(bm25.encode_documents(["我喜欢吃北京烤鸭"])[0])
    # Words, not one token per sentence and not only single characters.
    for word in ("喜欢", "北京", "烤鸭"):
        word_terms = terms(bm25.encode_query(word))
        assert len(word_terms) == 1, word
        assert word_terms <= doc, word
    assert len(doc) >= 3
    # An unrelated Chinese query shares nothing.
    assert not terms(bm25.encode_query("上海 天气")) & doc


def test_chinese_stopwords_are_dropped(bm25: Bm25Encoder) -> None:
    assert bm25.encode_query("的了是") == SparseVector([], [])
    with_particles = terms(bm25.encode_documents(["我的猫是黑色的"])[0])
    assert with_particles == terms(bm25.encode_query("黑色 猫"))


def test_english_is_stemmed_and_stopworded(bm25: Bm25Encoder) -> None:
    doc = bm25.encode_documents(["The dogs were running in the park"])[0]
    assert terms(bm25.encode_query("run dog park")) == terms(doc)
    assert bm25.encode_query("the of and") == SparseVector([], [])


def test_unrelated_english_text_shares_no_terms(bm25: Bm25Encoder) -> None:
    doc = terms(bm25.encode_documents(["I only write Python, tabs not spaces"])[0])
    assert terms(bm25.encode_query("tabs")) <= doc
    assert not terms(bm25.encode_query("weather in Paris")) & doc


def test_query_weights_are_one_and_document_weights_grow_with_frequency(
    bm25: Bm25Encoder,
) -> None:
    query = bm25.encode_query("python python tabs")
    assert sorted(query.values) == [1.0, 1.0]
    doc = bm25.encode_documents(["python python python tabs"])[0]
    weights = dict(zip(doc.indices, doc.values, strict=True))
    (python_index,) = bm25.encode_query("python").indices
    (tabs_index,) = bm25.encode_query("tabs").indices
    assert weights[python_index] > weights[tabs_index] > 0


def test_documents_are_encoded_one_per_text_in_order(bm25: Bm25Encoder) -> None:
    texts = ["tabs", "北京", "", "spaces"]
    vectors = bm25.encode_documents(texts)
    assert len(vectors) == 4
    assert vectors[2] == SparseVector([], [])
    assert vectors[1] == bm25.encode_documents(["北京"])[0]


@pytest.mark.parametrize("text", ["", "   ", "\n\t", "，。！", "...", "the"])
def test_blank_punctuation_or_stopword_text_gives_an_empty_vector(
    bm25: Bm25Encoder, text: str
) -> None:
    assert bm25.encode_query(text) == SparseVector([], [])
    assert bm25.encode_documents([text]) == [SparseVector([], [])]


@pytest.mark.parametrize("bad", [None, 3, b"bytes"])
def test_non_strings_are_rejected(bm25: Bm25Encoder, bad: Any) -> None:
    with pytest.raises(InvalidValueError):
        bm25.encode_query(bad)
    with pytest.raises(InvalidValueError, match=r"texts\[1\]"):
        bm25.encode_documents(["ok", bad])


def test_a_bare_string_is_not_encoded_per_character(bm25: Bm25Encoder) -> None:
    with pytest.raises(InvalidValueError, match="list"):
        bm25.encode_documents("tabs")  # type: ignore[arg-type]


def test_indices_are_the_same_in_another_process(bm25: Bm25Encoder) -> None:
    texts = ["I only write Python, tabs not spaces", "我用 Python 写代码，缩进用制表符"]
    script = (
        "import json, sys; from agentmem.sparse import Bm25Encoder; "
        "e = Bm25Encoder(); texts = json.loads(sys.argv[1]); "
        "print(json.dumps([v.indices for v in e.encode_documents(texts)]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, json.dumps(texts)],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "12345", "PATH": ""},
    )
    assert json.loads(out.stdout) == [v.indices for v in bm25.encode_documents(texts)]


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=80))
def test_any_text_gives_a_valid_deterministic_vector(text: str) -> None:
    bm25 = Bm25Encoder()
    vector = bm25.encode_documents([text])[0]
    assert len(set(vector.indices)) == len(vector.indices)
    assert all(0 <= i < 2**32 for i in vector.indices)
    assert all(v > 0 for v in vector.values)
    assert vector == bm25.encode_documents([text])[0]
    assert terms(bm25.encode_query(text)) == terms(vector)


def test_a_single_language_can_be_chosen() -> None:
    chinese = Bm25Encoder("chinese")
    assert chinese.encode_query("我") == SparseVector([], [])  # Chinese stopword
    assert len(chinese.encode_query("北京").indices) == 1


@pytest.mark.parametrize(
    "kwargs", [{"language": "klingon"}, {"b": 2.0}, {"k": -1.0}, {"avg_len": 0.0}, {"k": "1"}]
)
def test_bad_options_are_configuration_errors(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        Bm25Encoder(**kwargs)
