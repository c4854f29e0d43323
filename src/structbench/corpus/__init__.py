"""Corpora: loaders that turn source files into the flat-document tables of docs/method.md §3.

``load_corpus(spec)`` dispatches on ``spec["kind"]`` and returns a ``CorpusTables`` (documents,
paragraphs, gold sections, queries, funnel, skipped), verified mechanically before it is returned.
Paths are used as given (relative ones against the working directory). Keys per kind (an unknown
key or a missing required one is a ``ValueError`` naming it):

all kinds
    ``kind`` (required): ``markdown`` | ``chroma`` | ``qasper`` | ``wikitext`` | ``wikipedia``;
    ``name`` (optional): the ``corpus`` column value, default the kind;
    ``queries`` (optional, null): ``generated`` scores the corpus on LLM-generated queries
    (``structbench.querygen``) instead of its own questions, which are still loaded and verified.
``markdown`` (``markdown.py``)
    ``path`` (required): folder of ``*.md`` files, searched recursively (``doc_id`` = file stem);
    ``questions`` (optional, null): JSONL questions file with verbatim evidence quotes or source ranges.
``chroma`` (``chroma.py``)
    ``path`` (required): Chroma's benchmark folder (``corpora/*.md`` and ``questions_df.csv``), evidence
    placed by its ``start_index``/``end_index``; ``corpus_ids`` (optional, null = every file): the files to
    read, by stem; ``markup`` (optional, ``markdown``): ``wikitext`` reads each file as WikiText articles
    with their headings (Chroma's ``wikitexts``), each question given to the article of its excerpts.
``qasper`` (``qasper.py``)
    ``paths`` (required): list of files (a single string is accepted): official dict JSON,
    official ``.tgz`` release tarballs, or Hugging Face columnar JSON; splits are merged;
    ``splits`` (optional, null = all): which of ``train``/``dev``/``test`` to read from tarballs;
    ``fuzzy_threshold`` (optional, default 90): rapidfuzz ratio (0..100) for the fuzzy and
    section-title steps of evidence mapping; ``max_docs`` (optional, null): keep only the first
    N usable papers (tiny runs).
``wikitext`` (``wikitext.py``)
    ``path`` (required): the WikiText raw file (e.g. ``wiki.test.raw``);
    filters (optional; defaults = Kuehlkamp et al., table 6; null disables one): ``min_words`` (3000),
    ``min_depth`` (3, title = 1), ``min_sections`` (12), ``n_docs`` (200), ``max_per_bucket`` (60),
    ``seed`` (the study's, ``defaults.SEED``).
``wikipedia`` (``wikipedia.py``)
    the same filters, plus ``cache_dir`` (required): on-disk API response cache;
    ``user_agent`` (required): contact User-Agent for the Wikimedia API; ``rate_limit_s``
    (optional, default 1.0): minimum seconds between requests; ``api_url`` (optional, default
    English Wikipedia); ``max_retries`` (optional, default 5).
"""

from __future__ import annotations

from structbench.corpus.build import CorpusTables, build_tables
from structbench.corpus.verify import (
    assert_verified,
    verify_corpus,
    verify_paragraphs,
    verify_queries,
    verify_sections,
)

_FILTER_KEYS = ("min_words", "min_depth", "min_sections", "n_docs", "max_per_bucket", "seed")
_KEYS = {
    "markdown": ({"path"}, {"questions"}),
    "chroma": ({"path"}, {"corpus_ids", "markup"}),
    "qasper": ({"paths"}, {"splits", "fuzzy_threshold", "max_docs"}),
    "wikitext": ({"path"}, set(_FILTER_KEYS)),
    "wikipedia": ({"cache_dir", "user_agent"}, set(_FILTER_KEYS) | {"rate_limit_s", "api_url", "max_retries"}),
}


QUERY_SOURCES = (None, "generated")


def _check_keys(spec: dict) -> str:
    if not isinstance(spec, dict):
        raise ValueError(f"corpus spec must be a mapping, got {type(spec).__name__}")
    kind = spec.get("kind")
    if kind not in _KEYS:
        raise ValueError(f"corpus spec key 'kind' must be one of {sorted(_KEYS)}, got {kind!r}")
    required, optional = _KEYS[kind]
    for key in sorted(required):
        if spec.get(key) in (None, "", []):
            raise ValueError(f"corpus spec ({kind}) is missing required key {key!r}")
    unknown = sorted(set(spec) - required - optional - {"kind", "name", "queries"})
    if unknown:
        raise ValueError(f"corpus spec ({kind}) has unknown key(s) {unknown}")
    if spec.get("queries") not in QUERY_SOURCES:
        raise ValueError(f"corpus spec key 'queries' must be 'generated' or null, got {spec.get('queries')!r}")
    return kind


def generates_queries(spec: dict) -> bool:
    """Whether the corpus is scored on generated queries (``queries: generated``)."""
    _check_keys(spec)
    return spec.get("queries") == "generated"


def has_queries(spec: dict) -> bool:
    """Whether the corpus is scored: it brings its own questions (QASPER; Markdown with a questions
    file) or has them generated (``queries: generated``).

    The others (WikiText, Wikipedia-FA, Markdown without questions, none of them with ``queries:
    generated``) are built, verified, chunked and reported, but not scored."""
    kind = _check_keys(spec)
    return (
        generates_queries(spec) or kind in ("qasper", "chroma") or (kind == "markdown" and bool(spec.get("questions")))
    )


def source_files(spec: dict) -> list[str]:
    """The files a corpus is built from, so that an edited document or questions file rebuilds it.

    A missing Markdown folder or one without ``.md`` files is a ``ValueError`` naming the path, raised
    when the workflow is planned rather than minutes into the run. Wikipedia-FA is fetched (its on-disk
    API cache is an implementation detail), so it lists no source files."""
    kind = _check_keys(spec)
    if kind == "markdown":
        from structbench.corpus.markdown import markdown_files

        files = [str(path) for path in markdown_files(spec["path"])]
        return files + ([str(spec["questions"])] if spec.get("questions") else [])
    if kind == "chroma":
        from structbench.corpus.chroma import check_options, chroma_files, corpus_files

        check_options(spec.get("corpus_ids"), spec.get("markup", "markdown"))
        corpora, questions = chroma_files(spec["path"])
        return [str(path) for path in corpus_files(corpora, spec.get("corpus_ids"))] + [str(questions)]
    if kind == "qasper":
        paths = spec["paths"]
        return [paths] if isinstance(paths, str) else [str(p) for p in paths]
    if kind == "wikitext":
        return [str(spec["path"])]
    return []


def load_corpus(spec: dict) -> CorpusTables:
    """Load the corpus ``spec`` describes (keys in the module docstring), verified.

    Raises ``ValueError`` on a bad spec, bad input (see each loader) or a violated invariant.
    """
    tables = _load(spec)
    violations = verify_queries(tables.documents, tables.queries)
    if violations:
        raise ValueError(f"{len(violations)} query violation(s):\n" + "\n".join(violations[:50]))
    return tables


def _load(spec: dict) -> CorpusTables:
    kind = _check_keys(spec)
    name = str(spec.get("name") or kind)
    if kind == "markdown":
        from structbench.corpus.markdown import load_markdown_folder

        return load_markdown_folder(spec["path"], corpus=name, questions_path=spec.get("questions"))
    if kind == "chroma":
        from structbench.corpus.chroma import load_chroma

        return load_chroma(
            spec["path"], corpus=name, corpus_ids=spec.get("corpus_ids"), markup=spec.get("markup", "markdown")
        )
    if kind == "qasper":
        from structbench.corpus.qasper import load_qasper

        threshold = spec.get("fuzzy_threshold", 90)
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold <= 100:
            raise ValueError(f"corpus spec key 'fuzzy_threshold' must be a number in 0..100, got {threshold!r}")
        paths = spec["paths"]
        return load_qasper(
            [paths] if isinstance(paths, str) else list(paths),
            corpus=name,
            splits=spec.get("splits"),
            fuzzy_threshold=float(threshold),
            max_docs=spec.get("max_docs"),
        )
    from structbench.corpus.wiki_selection import Filters

    filters = Filters.from_spec(spec)
    if kind == "wikitext":
        from structbench.corpus.wikitext import load_wikitext

        return load_wikitext(spec["path"], corpus=name, filters=filters)
    from structbench.corpus.wikipedia import CachedFetcher, HttpFetcher, build_wikipedia_corpus

    http = HttpFetcher(
        user_agent=spec["user_agent"],
        api_url=spec.get("api_url") or "https://en.wikipedia.org/w/api.php",
        rate_limit_s=float(spec.get("rate_limit_s", 1.0)),
        max_retries=int(spec.get("max_retries", 5)),
    )
    return build_wikipedia_corpus(CachedFetcher(http, spec["cache_dir"]), corpus=name, filters=filters)


__all__ = [
    "CorpusTables",
    "assert_verified",
    "build_tables",
    "generates_queries",
    "has_queries",
    "load_corpus",
    "source_files",
    "verify_corpus",
    "verify_paragraphs",
    "verify_queries",
    "verify_sections",
]
