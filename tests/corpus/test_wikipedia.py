"""Wikipedia-FA builder: the canonical normalizer, the seeded capped walk and the response cache.

The HTTP boundary is the only thing replaced: the builder takes a fetch callable, and the tests give
it MediaWiki API responses they construct (there is no network here).
"""

import io
import json
import random
import urllib.error

import pytest

from structbench.corpus import load_corpus
from structbench.corpus.build import document_depth, heading_count, word_count
from structbench.corpus.verify import verify_corpus
from structbench.corpus.wiki_selection import Filters
from structbench.corpus.wikipedia import (
    CachedFetcher,
    HttpFetcher,
    build_wikipedia_corpus,
    featured_titles,
    normalize_wikitext,
)

ARTICLE = """{{Short description|A test}}
{{Infobox battle|name=Test|date=1900}}
'''The Battle of Test''' (born {{birth date|1900}}) was a [[battle|fight]] near [[Testville]].\
<ref>{{cite book|title=X}}</ref> It ended&nbsp;quickly.<ref name="a"/>
[[File:Map.png|thumb|A map of [[Testville]]]]

Second lead paragraph with an [https://example.org external link] and a <!-- hidden --> comment.

== Background ==
Background text.<ref>Ref.</ref>
* first point
* second [[point|item]]
Prose after the list.

{| class="wikitable"
! Header
|-
| cell
|}

=== Forces ===
<blockquote>A quoted line.</blockquote>
==== Infantry ====
Infantry text with <math>x^2</math> math removed and {{convert|5|km}} a template removed.
== Aftermath ==
Aftermath text. __NOTOC__
== References ==
{{reflist}}
=== Sources ===
* A book
== External links ==
* [https://example.org Site]
[[Category:Battles involving Testland]]
"""


def test_normalizer_flattens_one_article():
    doc = normalize_wikitext(ARTICLE, "Battle of Test")
    assert doc.paragraphs == [
        "The Battle of Test (born) was a fight near Testville. It ended quickly.",
        "Second lead paragraph with an external link and a comment.",
        "Background text.",
        "first point\nsecond item",
        "Prose after the list.",
        "A quoted line.",
        "Infantry text with math removed and a template removed.",
        "Aftermath text.",
    ]
    assert [(s.title, s.level, s.para_start, s.para_end) for s in doc.sections] == [
        ("", 1, 0, 2),
        ("Background", 1, 2, 5),
        ("Forces", 2, 5, 6),
        ("Infantry", 3, 6, 7),
        ("Aftermath", 1, 7, 8),
    ]
    assert document_depth(doc.sections) == 4


def _article(title, n_sections, words_per_section, deep=True):
    parts = [f"'''{title}''' is a subject.{{{{cn}}}}\n"]
    for index in range(n_sections):
        parts.append(f"== Part {index} ==\n" + " ".join(["word"] * words_per_section) + ".<ref>r</ref>\n")
        if deep and index == 0:
            parts.append("=== Detail ===\nDetail words here.\n")
    return "\n".join(parts)


class FakeApi:
    """Serves constructed MediaWiki responses and counts the requests it answers."""

    def __init__(self, pages, page_size=4):
        self.pages = pages  # title -> (wikitext or None, categories)
        self.page_size = page_size
        self.calls = 0

    def __call__(self, params):
        self.calls += 1
        if params.get("list") == "categorymembers":
            assert params["cmtitle"] == "Category:Featured articles" and params["cmnamespace"] == "0"
            titles = sorted(self.pages, reverse=True)  # the API's order must not matter
            start = int(params.get("cmcontinue", 0))
            batch = titles[start : start + self.page_size]
            response = {"batchcomplete": True, "query": {"categorymembers": [{"ns": 0, "title": t} for t in batch]}}
            if start + self.page_size < len(titles):
                response["continue"] = {"cmcontinue": str(start + self.page_size), "continue": "-||"}
            return response
        assert params["prop"] == "revisions|categories" and params["clshow"] == "!hidden"
        title = params["titles"]
        wikitext, categories = self.pages[title]
        if wikitext is None:
            return {"query": {"pages": [{"ns": 0, "title": title, "missing": True}]}}
        return {
            "query": {
                "pages": [
                    {
                        "pageid": abs(hash(title)) % 10**6,
                        "ns": 0,
                        "title": title,
                        "revisions": [
                            {"revid": 42, "slots": {"main": {"contentmodel": "wikitext", "content": wikitext}}}
                        ],
                        "categories": [{"ns": 14, "title": f"Category:{c}"} for c in categories],
                    }
                ]
            }
        }


def _pages():
    pages = {}
    for i in range(8):
        pages[f"War {i}"] = (_article(f"War {i}", 4, 30), ["Battles of the test war", "1900 births"])
    for i in range(4):
        pages[f"Person {i}"] = (_article(f"Person {i}", 4, 30), ["1950 births", "Living people"])
    for i in range(3):
        pages[f"Thing {i}"] = (_article(f"Thing {i}", 4, 30), ["Things"])
    pages["Short one"] = (_article("Short one", 4, 2), ["Things"])
    pages["Flat one"] = (_article("Flat one", 4, 30, deep=False), ["Things"])
    pages["Few sections"] = (_article("Few sections", 1, 200), ["Things"])  # 2 headings
    pages["Gone"] = (None, [])
    pages["Only templates"] = ("{{Infobox}}\n== A ==\n{{reflist}}\n", ["Things"])
    return pages


FILTERS = Filters(min_words=100, min_depth=3, min_sections=3, n_docs=9, max_per_bucket=3, seed=3)


def test_selection_walk_filters_and_cap():
    pages = _pages()
    api = FakeApi(pages)
    tables = build_wikipedia_corpus(api, filters=FILTERS)
    assert verify_corpus(tables) == []
    # the walk, replayed from its definition: sorted titles shuffled by random.Random(seed)
    order = sorted(pages)
    random.Random(FILTERS.seed).shuffle(order)
    expected, counts, reasons = [], {}, {}
    bucket_of = {"War": "history_war", "Person": "biography", "Thing": "other"}
    for title in order:
        if len(expected) == FILTERS.n_docs:
            break
        kind = title.split()[0]
        if title == "Gone":
            reasons[title] = "missing"
        elif title == "Only templates":
            reasons[title] = "no_paragraphs"
        elif title == "Short one":
            reasons[title] = "too_few_words"
        elif title == "Flat one":
            reasons[title] = "too_shallow"
        elif title == "Few sections":
            reasons[title] = "too_few_sections"
        elif counts.get(bucket_of[kind], 0) >= FILTERS.max_per_bucket:
            reasons[title] = "bucket_full"
        else:
            counts[bucket_of[kind]] = counts.get(bucket_of[kind], 0) + 1
            expected.append(title)
    assert tables.documents["doc_id"].to_list() == expected
    assert set(reasons.values()) == {
        "missing",
        "no_paragraphs",
        "too_few_words",
        "too_shallow",
        "too_few_sections",
        "bucket_full",
    }  # this seed's walk meets every rejection
    assert {r["record"]: r["reason"] for r in tables.skipped.to_dicts()} == reasons
    metas = [json.loads(m) for m in tables.documents["meta"]]
    assert all(m["revid"] == 42 and m["categories"] for m in metas)
    buckets = [m["topic_bucket"] for m in metas]
    assert max(buckets.count(b) for b in set(buckets)) <= FILTERS.max_per_bucket
    funnel = {(r["unit"], r["step"], r["reason"]): r["count"] for r in tables.funnel.to_dicts()}
    assert funnel[("documents", "in", "")] == len(pages)
    assert funnel[("documents", "out", "")] == len(expected)
    for doc_id in expected:
        doc = normalize_wikitext(pages[doc_id][0], doc_id)
        assert word_count(doc.paragraphs) >= 100 and heading_count(doc.sections) >= 3


def test_featured_titles_follows_continuation():
    api = FakeApi(_pages(), page_size=3)
    assert featured_titles(api) == sorted(_pages())
    assert api.calls == -(-len(_pages()) // 3)


def test_cache_makes_a_rerun_fetch_nothing(tmp_path):
    api = FakeApi(_pages())
    first = build_wikipedia_corpus(CachedFetcher(api, tmp_path / "cache"), filters=FILTERS)
    calls = api.calls
    assert calls > 0 and any((tmp_path / "cache").rglob("*.json"))
    second = build_wikipedia_corpus(CachedFetcher(api, tmp_path / "cache"), filters=FILTERS)
    assert api.calls == calls  # zero requests on the re-run
    for name in ("documents", "paragraphs", "sections", "funnel", "skipped"):
        assert getattr(first, name).equals(getattr(second, name)), name


class _Response(io.BytesIO):
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_http_fetcher_retries_then_succeeds(monkeypatch):
    attempts = []

    def fake_urlopen(request, timeout):
        attempts.append(request)
        if len(attempts) == 1:
            raise urllib.error.HTTPError(request.full_url, 503, "busy", {"Retry-After": "0"}, None)
        if len(attempts) == 2:
            return _Response(json.dumps({"error": {"code": "maxlag", "info": "lagged"}}).encode())
        return _Response(json.dumps({"query": {"pages": []}}).encode())

    monkeypatch.setattr("urllib.request.urlopen", fake_urlopen)
    fetch = HttpFetcher("structbench-tests/0 (test@example.org)", rate_limit_s=0, backoff_s=0)
    assert fetch({"action": "query"}) == {"query": {"pages": []}}
    assert len(attempts) == 3
    assert attempts[0].get_header("User-agent") == "structbench-tests/0 (test@example.org)"
    assert "maxlag=5" in attempts[0].full_url


def test_http_fetcher_gives_up_and_requires_user_agent(monkeypatch):
    def always_down(request, timeout):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr("urllib.request.urlopen", always_down)
    fetch = HttpFetcher("ua", rate_limit_s=0, backoff_s=0, max_retries=2)
    with pytest.raises(RuntimeError, match="failed after 3 tries"):
        fetch({"action": "query"})
    with pytest.raises(ValueError, match="user_agent"):
        HttpFetcher("")
    with pytest.raises(ValueError, match="missing required key 'user_agent'"):
        load_corpus({"kind": "wikipedia", "cache_dir": "x"})
