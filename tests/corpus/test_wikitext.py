"""WikiText-2 raw: article splitting (false titles), detokenizing, filters and buckets."""

import csv
import json

import pytest
from conftest import SHARED_DATA

from structbench.corpus import load_corpus
from structbench.corpus.build import build_tables, document_depth, heading_count
from structbench.corpus.corpus_stats import corpus_statistics
from structbench.corpus.verify import verify_corpus
from structbench.corpus.wiki_selection import Filters, topic_bucket
from structbench.corpus.wikitext import detokenize, load_wikitext, parse_wikitext

FOLDER = SHARED_DATA / "wikitext/wikitext-2-raw-test"
RAW = FOLDER / "wiki.test.raw"

pytestmark = pytest.mark.skipif(not RAW.exists(), reason="shared WikiText data not present")


@pytest.fixture(scope="module")
def articles():
    return parse_wikitext(RAW.read_bytes().decode("utf-8"))


@pytest.fixture(scope="module")
def tsv():
    with open(FOLDER / "articles.tsv", encoding="utf-8") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def test_sixty_articles_against_articles_tsv(articles, tsv):
    # articles.tsv splits naively: its 62 rows include the two equation fragments of "Constant k filter"
    fragments = {"1 rad / s and a nominal impedance k", "1 henry and capacitance C"}
    assert len(tsv) == 62 and fragments <= {row["title"] for row in tsv}
    assert [doc.title for doc in articles] == [detokenize(row["title"]) for row in tsv if row["title"] not in fragments]
    by_title = {detokenize(row["title"]): row for row in tsv}
    for doc in articles:
        row = by_title[doc.title]
        assert document_depth(doc.sections) == int(row["max_depth"])
        if doc.title != "Constant k filter":
            assert len(doc.paragraphs) == int(row["paragraphs"])
            assert heading_count(doc.sections) == int(row["headings"])


def test_false_titles_are_glued_back_into_their_sentence(articles):
    doc = next(doc for doc in articles if doc.title == "Constant k filter")
    assert doc.meta["glued_fragments"] == 2
    glued = next(p for p in doc.paragraphs if "nominal impedance" in p)
    assert "cut-off frequency of ωc = 1 rad / s and a nominal impedance k = 1 Ω. This is produced" in glued
    assert "inductance L = 1 henry and capacitance C = 1 farad. This prototype can be" in glued
    assert [s.title for s in doc.sections][-1] == "Cascading sections"
    assert doc.sections[-1].para_end == len(doc.paragraphs)


def test_detokenizer():
    assert detokenize(' The Ise @-@ class ( 1 @,@ 000 t ) had " two " guns , 3 @.@ 5 m wide . ') == (
        'The Ise-class (1,000 t) had "two" guns, 3.5 m wide.'
    )
    assert detokenize("Teddy 's Story ; they Don 't : $ 5 and 10 % [ sic ]") == (
        "Teddy's Story; they Don't: $5 and 10% [sic]"
    )
    assert detokenize('he said " yes " and " no') == 'he said "yes" and "no'


def test_every_article_tiles_and_slices(articles):
    documents, paragraphs, sections = build_tables("wikitext", articles)
    from structbench.corpus.build import CorpusTables

    assert verify_corpus(CorpusTables(documents, paragraphs, sections)) == []
    texts = dict(zip(documents["doc_id"], documents["text"]))
    for doc in articles:
        rows = paragraphs.filter(paragraphs["doc_id"] == doc.doc_id).sort("para_idx")
        assert [texts[doc.doc_id][s:e] for s, e in zip(rows["start"], rows["end"])] == doc.paragraphs
        assert " @-@ " not in texts[doc.doc_id] and " , " not in texts[doc.doc_id]
    assert sections["title"].str.contains(" @").sum() == 0


def test_default_filters_select_and_report(tsv):
    tables = load_corpus({"kind": "wikitext", "path": str(RAW)})
    assert verify_corpus(tables) == []
    funnel = {(r["unit"], r["step"], r["reason"]): r["count"] for r in tables.funnel.to_dicts()}
    assert funnel[("documents", "in", "")] == 60
    assert funnel[("documents", "out", "")] == tables.documents.height == 18
    assert funnel[("documents", "rejected", "too_few_words")] == 34
    assert sum(count for (unit, step, _), count in funnel.items() if step == "rejected") == 42
    assert tables.queries.height == 0 and tables.skipped.height == 42
    metas = [json.loads(m) for m in tables.documents["meta"]]
    assert [m["selection_rank"] for m in metas] == list(range(18))
    stats = corpus_statistics(tables)
    assert stats["documents"] == 18 and min(int(d) for d in stats["depth_histogram"]) >= 3
    assert stats["words"] >= 18 * 3000
    json.dumps(stats)


def test_walk_is_seeded_and_capped():
    spec = {"kind": "wikitext", "path": str(RAW), "min_words": 0, "min_depth": 0, "min_sections": 0}
    first = load_corpus({**spec, "n_docs": 10, "seed": 1})
    again = load_corpus({**spec, "n_docs": 10, "seed": 1})
    other = load_corpus({**spec, "n_docs": 10, "seed": 2})
    assert first.documents["doc_id"].to_list() == again.documents["doc_id"].to_list()
    assert first.documents["doc_id"].to_list() != other.documents["doc_id"].to_list()
    capped = load_corpus({**spec, "max_per_bucket": 2, "n_docs": None})
    buckets = [json.loads(m)["topic_bucket"] for m in capped.documents["meta"]]
    assert max(buckets.count(b) for b in set(buckets)) == 2
    assert capped.skipped.filter(capped.skipped["reason"] == "bucket_full").height == 60 - capped.documents.height


def test_empty_selection_gives_empty_tables():
    tables = load_wikitext(RAW, filters=Filters(min_words=10**9))
    assert tables.documents.height == tables.sections.height == 0
    assert verify_corpus(tables) == []


def test_topic_buckets_follow_table_order():
    assert topic_bucket(["Battleships of Japan", "1985 births"]) == "biography"  # "battleships" is not "battle"
    assert topic_bucket(["Battles of the Korean War", "1985 births"]) == "history_war"  # first bucket wins
    assert topic_bucket(["Operation Eastern Exit"]) == "other"  # "opera" is a whole word only
    assert topic_bucket(["1933 Treasure Coast hurricane"]) == "geo_places"  # singular of "hurricanes"
    assert topic_bucket(["Astronomical objects discovered in 1990"]) == "science_nature"  # stem
    assert topic_bucket(["Nintendo video games"]) == "arts_media"
    assert topic_bucket([]) == "other"
