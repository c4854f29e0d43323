"""The Wikipedia Featured Articles corpus, built from the MediaWiki API (docs/method.md §4; Kuehlkamp et al., appendix
E).

For real users; the offline stand-in is WikiText (``wikitext.py``). The steps:

1. ``featured_titles``: the titles in ``Category:Featured articles`` (main namespace, all
   continuation pages), deduplicated and sorted, so the walk depends on the set of titles and not
   on the API's listing order.
2. ``selection.select_documents``: shuffle under ``seed``, walk, fetch each page's current wikitext
   and non-hidden categories (``clshow=!hidden``), flatten it with ``normalize_wikitext``, accept
   it if it passes the filters (``min_words 3000, min_depth 3, min_sections 12``) and its topic
   bucket (first matching bucket over the categories) has fewer than ``max_per_bucket`` (60)
   documents; stop at ``n_docs`` (200).

``normalize_wikitext`` is the one canonical normalizer (mwparserfromhell): templates, comments,
``<ref>``/``<references>``/``<gallery>``/``<math>`` and similar tags, tables, and links to files,
images and categories are removed (so is a template's text, e.g. ``{{convert|5|km}}``: the one
normalizer favours never emitting markup over keeping such values); other links keep their text
(the label, else the target); formatting tags keep their contents; HTML entities are decoded;
magic words (``__NOTOC__``) go. Headings become sections (``==`` is level 1, ``===`` level 2, ...).
Lines are whitespace-collapsed; blank lines separate paragraphs; a list is one paragraph (its items
one per line), cut off from prose lines directly before or after it. Brackets emptied by removed
templates go (``( )``; ``(born )`` becomes ``(born)``), as do spaces left before punctuation by
removed references. Back-matter sections
(``DROP_SECTIONS``: See also, Notes, References, External links, Further reading, ...) are dropped
with their subsections: they hold citations, not article content.

HTTP: the fetcher is injected, a callable ``fetch(params) -> dict`` (decoded JSON of one API
request). ``HttpFetcher`` does it with urllib, politely (a User-Agent is required, at least
``rate_limit_s`` between requests, retries with exponential backoff on 429/5xx/network errors and
``maxlag``, honouring ``Retry-After``); ``CachedFetcher`` puts an on-disk cache in front, keyed by
the request parameters, so a re-run makes no requests. A fetch that still fails after its retries
raises (re-running resumes from the cache); a title that is missing or has no text is skipped and
counted. The tests drive the builder with API responses they construct; **the real HTTP fetch is
untested here (no network)**.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

import mwparserfromhell
from mwparserfromhell.nodes import Comment, ExternalLink, Heading, HTMLEntity, Tag, Template, Text, Wikilink

from structbench.corpus.build import CorpusTables, sections_from_headings
from structbench.corpus.wiki_selection import Filters, select_documents, selection_tables
from structbench.datamodel import ParsedDocument

Fetch = Callable[[dict], dict]

API_URL = "https://en.wikipedia.org/w/api.php"
FEATURED_CATEGORY = "Category:Featured articles"
DROP_SECTIONS = frozenset(
    {
        "see also",
        "notes",
        "references",
        "external links",
        "further reading",
        "bibliography",
        "sources",
        "citations",
        "footnotes",
        "works cited",
        "notes and references",
        "references and notes",
        "general references",
        "explanatory notes",
        "cited sources",
        "primary sources",
        "secondary sources",
    }
)
_DROP_TAGS = frozenset(
    {
        "ref",
        "references",
        "gallery",
        "math",
        "chem",
        "ce",
        "timeline",
        "imagemap",
        "score",
        "graph",
        "mapframe",
        "maplink",
        "templatestyles",
        "table",
        "nowiki",
        "syntaxhighlight",
        "source",
        "hiero",
        "inputbox",
        "categorytree",
        "indicator",
    }
)
_DROP_NAMESPACES = frozenset({"file", "image", "category", "media", "wikt", "wiktionary", "s", "wikisource"})
_LIST_MARKUP = frozenset({"*", "#", ";", ":"})
_LIST_MARK = "\x01"  # stands for a list-item marker until paragraphs are cut
_MAGIC_WORD = re.compile(r"__[A-Z]+__")
_EMPTY_BRACKETS = re.compile(r"\s*\(\s*[,;:]?\s*\)")
_BRACKET_SPACE = re.compile(r"(?<=\()\s+|\s+(?=\))")
_SPACE_BEFORE_PUNCTUATION = re.compile(r"\s+([,.;:])(?=\s|$)")


# ---------------------------------------------------------------------------------------------- normalizer


def _plain(wikicode) -> str:
    """Visible text of a wikicode fragment or node list (see the module docstring for what is dropped)."""
    out: list[str] = []
    for node in getattr(wikicode, "nodes", wikicode):
        if isinstance(node, Text):
            out.append(str(node))
        elif isinstance(node, (Template, Comment, Heading)):
            continue
        elif isinstance(node, Wikilink):
            target = str(node.title).strip()
            namespace = target.split(":", 1)[0].strip().lower() if ":" in target else ""
            if namespace in _DROP_NAMESPACES and not target.startswith(":"):
                continue  # files, images and categories carry no article text
            out.append(_plain(node.text) if node.text is not None else _plain(node.title).lstrip(":"))
        elif isinstance(node, ExternalLink):
            out.append(_plain(node.title) if node.title is not None else ("" if node.brackets else str(node.url)))
        elif isinstance(node, HTMLEntity):
            out.append(node.normalize())
        elif isinstance(node, Tag):
            tag = str(node.tag).strip().lower()
            if tag in _DROP_TAGS:
                continue
            if tag == "br":
                out.append("\n")
            elif node.wiki_markup in _LIST_MARKUP:
                out.append(_LIST_MARK)
            elif node.contents is not None and not node.self_closing:
                out.append(_plain(node.contents))
        else:
            out.append("")  # arguments and other parser nodes have no visible text
    return "".join(out)


def _clean_line(line: str) -> str:
    line = _MAGIC_WORD.sub("", line)
    line = " ".join(line.split())
    line = _EMPTY_BRACKETS.sub("", line)
    line = _BRACKET_SPACE.sub("", line)
    line = _SPACE_BEFORE_PUNCTUATION.sub(r"\1", line)
    return line.strip()


def _paragraphs(text: str) -> list[str]:
    """Blank-line separated blocks; a block also breaks where a list starts or ends."""
    paragraphs: list[str] = []
    block: list[str] = []
    block_is_list = False
    for raw in text.split("\n"):
        is_list = raw.lstrip().startswith(_LIST_MARK)
        line = _clean_line(raw.replace(_LIST_MARK, " "))
        if block and (not line or is_list != block_is_list):
            paragraphs.append("\n".join(block))
            block = []
        if line:
            block.append(line)
            block_is_list = is_list
    if block:
        paragraphs.append("\n".join(block))
    return [paragraph for paragraph in paragraphs if re.search(r"\w", paragraph)]


def normalize_wikitext(wikitext: str, title: str, doc_id: str | None = None) -> ParsedDocument:
    """The canonical flattening of one article's wikitext into paragraphs and its heading tree."""
    code = mwparserfromhell.parse(wikitext)
    paragraphs: list[str] = []
    headings: list[tuple[int, str, int]] = []
    buffer = []
    dropping_below: int | None = None  # level of a dropped back-matter heading, while inside it

    def flush() -> None:
        if buffer and dropping_below is None:
            paragraphs.extend(_paragraphs(_plain(buffer)))
        buffer.clear()

    for node in code.nodes:
        if isinstance(node, Heading):
            flush()
            heading_title = " ".join(_plain(node.title).split())
            if dropping_below is not None and node.level > dropping_below:
                continue
            dropping_below = None
            if heading_title.casefold().rstrip(" .:") in DROP_SECTIONS:
                dropping_below = node.level
                continue
            headings.append((node.level, heading_title, len(paragraphs)))
        else:
            buffer.append(node)
    flush()
    return ParsedDocument(
        doc_id=doc_id or title,
        title=title,
        paragraphs=paragraphs,
        sections=sections_from_headings(len(paragraphs), headings),
    )


# ---------------------------------------------------------------------------------------------- HTTP


class HttpFetcher:
    """MediaWiki API requests over urllib, politely. Untested here: the build machine has no network."""

    def __init__(
        self,
        user_agent: str,
        api_url: str = API_URL,
        rate_limit_s: float = 1.0,
        max_retries: int = 5,
        backoff_s: float = 2.0,
        timeout_s: float = 60.0,
    ):
        if not user_agent or not user_agent.strip():
            raise ValueError("wikipedia: `user_agent` is required (Wikimedia policy: name and contact)")
        self.user_agent = user_agent
        self.api_url = api_url
        self.rate_limit_s = rate_limit_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.timeout_s = timeout_s
        self._last_request = 0.0

    def __call__(self, params: dict) -> dict:
        query = urllib.parse.urlencode({**params, "maxlag": "5"})
        request = urllib.request.Request(f"{self.api_url}?{query}", headers={"User-Agent": self.user_agent})
        last_error: Exception | None = None
        for attempt in range(self.max_retries + 1):
            wait = self.rate_limit_s - (time.monotonic() - self._last_request)
            if wait > 0:
                time.sleep(wait)
            self._last_request = time.monotonic()
            retry_after = None
            try:
                with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                    payload = json.loads(response.read().decode("utf-8"))
                error = payload.get("error") if isinstance(payload, dict) else None
                if error and error.get("code") == "maxlag":
                    last_error = RuntimeError(f"maxlag: {error.get('info')}")
                else:
                    if error:
                        raise ValueError(f"MediaWiki API error for {params}: {error}")
                    return payload
            except urllib.error.HTTPError as error:
                if error.code not in (429, 500, 502, 503, 504):
                    raise
                last_error = error
                retry_after = error.headers.get("Retry-After") if error.headers else None
            except (urllib.error.URLError, TimeoutError, json.JSONDecodeError) as error:
                last_error = error
            delay = self.backoff_s * (2**attempt)
            if retry_after and retry_after.isdigit():
                delay = max(delay, float(retry_after))
            if attempt < self.max_retries:
                time.sleep(delay)
        raise RuntimeError(f"MediaWiki API request failed after {self.max_retries + 1} tries: {params}: {last_error}")


class CachedFetcher:
    """An on-disk cache in front of a fetcher: one JSON file per distinct request."""

    def __init__(self, fetch: Fetch, cache_dir: str | Path):
        self.fetch = fetch
        self.cache_dir = Path(cache_dir)

    def path_for(self, params: dict) -> Path:
        key = hashlib.sha256(json.dumps(params, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()
        return self.cache_dir / key[:2] / f"{key}.json"

    def __call__(self, params: dict) -> dict:
        path = self.path_for(params)
        if path.exists():
            return json.loads(path.read_text(encoding="utf-8"))
        response = self.fetch(params)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(response, ensure_ascii=False), encoding="utf-8")
        tmp.replace(path)
        return response


# ---------------------------------------------------------------------------------------------- API


def featured_titles(fetch: Fetch, category: str = FEATURED_CATEGORY) -> list[str]:
    """Main-namespace titles in ``category``, every continuation page, deduplicated and sorted."""
    titles: set[str] = set()
    params = {
        "action": "query",
        "list": "categorymembers",
        "cmtitle": category,
        "cmnamespace": "0",
        "cmlimit": "max",
        "format": "json",
        "formatversion": "2",
    }
    continuation: dict = {}
    for _ in range(10_000):
        response = fetch({**params, **continuation})
        titles.update(member["title"] for member in response.get("query", {}).get("categorymembers", []))
        if "continue" not in response:
            break
        continuation = {key: str(value) for key, value in response["continue"].items()}
    return sorted(titles)


def page_params(title: str) -> dict:
    return {
        "action": "query",
        "prop": "revisions|categories",
        "titles": title,
        "rvprop": "content|ids",
        "rvslots": "main",
        "clshow": "!hidden",
        "cllimit": "max",
        "redirects": "1",
        "format": "json",
        "formatversion": "2",
    }


def fetch_page(fetch: Fetch, title: str) -> dict | None:
    """``{title, pageid, revid, wikitext, categories}`` of a page, or ``None`` when it has no text."""
    response = fetch(page_params(title))
    pages = response.get("query", {}).get("pages", [])
    if isinstance(pages, dict):  # formatversion 1
        pages = list(pages.values())
    if not pages or pages[0].get("missing") or pages[0].get("invalid") or not pages[0].get("revisions"):
        return None
    page = pages[0]
    revision = page["revisions"][0]
    content = revision.get("slots", {}).get("main", {}).get("content", revision.get("content", revision.get("*")))
    if content is None:
        return None
    categories = [category["title"].split(":", 1)[-1] for category in page.get("categories", [])]
    return {
        "title": page.get("title", title),
        "pageid": page.get("pageid"),
        "revid": revision.get("revid"),
        "wikitext": content,
        "categories": categories,
    }


def build_wikipedia_corpus(fetch: Fetch, corpus: str = "wikipedia", filters: Filters | None = None) -> CorpusTables:
    """The Featured Articles corpus through ``fetch`` (wrap it in ``CachedFetcher`` for resumable runs)."""
    filters = filters or Filters()
    titles = featured_titles(fetch)
    if not titles:
        raise ValueError(f"wikipedia: {FEATURED_CATEGORY} listed no titles")
    seen_ids: set[str] = set()

    def get_document(title: str):
        page = fetch_page(fetch, title)
        if page is None:
            return None, [], "missing"
        if page["title"] in seen_ids:
            return None, [], "duplicate_redirect"
        doc = normalize_wikitext(page["wikitext"], page["title"])
        if not doc.paragraphs:
            return None, [], "no_paragraphs"
        seen_ids.add(page["title"])
        doc.meta = {
            "source": "wikipedia",
            "pageid": page["pageid"],
            "revid": page["revid"],
            "categories": page["categories"],
        }
        return doc, page["categories"], None

    selection = select_documents(titles, get_document, filters)
    return selection_tables(corpus, selection, [("wikipedia", title, reason) for title, reason in selection.rejected])
