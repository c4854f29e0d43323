"""Query writing by an LLM, screened twice for leakage (Kuehlkamp et al., appendix F; docs/method.md §9).

For one shard of documents, :func:`generate_candidates`

1. samples the gold targets (:mod:`~structbench.querygen.targets`);
2. asks the model for one question per target, all in one batched :meth:`LLM.chat` call: the prompt of
   the target's type (``llm/prompts/querygen_<type>.txt``) shows the document title and the span text
   (each span cut to ``span_chars`` characters at a word boundary, marked ``[...]``). Section headings
   are never shown: a query that echoes a heading would favour the conditions that prepend heading paths;
   the title is shown because a question must say what it is about, and every condition embeds the same
   documents;
3. cleans each answer (:func:`clean_question`) and screens it (:func:`~structbench.querygen.leakage.screen_question`);
   a request the backend could not answer (e.g. a prompt over the model's context) is rejected as
   ``no_answer`` (and, as every failed request, not cached: a rerun asks again);
4. asks for a paraphrase of every question that passed (``querygen_paraphrase.txt``, which shows the
   question only, never the span), cleans and screens it against the same gold spans with the same rules;
   the paraphrase is the query that ships.

Every answer is cached by the LLM layer under the hash of the request, so a rerun (or a changed threshold)
asks the model only for what it has not answered: a stricter ``rouge_max`` generates nothing, a looser
one only the paraphrases of newly passing questions.

The output is a :data:`~structbench.querygen.funnel.CANDIDATES` table, one row per target.
"""

from __future__ import annotations

import logging
import re

import polars as pl

from structbench.datamodel import document_texts
from structbench.defaults import CLIP_MARK
from structbench.llm import LLM, ChatRequest, load_prompt
from structbench.querygen.funnel import CANDIDATES
from structbench.querygen.leakage import FilterRules, Verdict, screen_question
from structbench.querygen.settings import QuerygenSettings
from structbench.querygen.targets import GoldTarget, document_layouts, sample_corpus_targets

log = logging.getLogger(__name__)

PARAPHRASE_PROMPT = "querygen_paraphrase"
NO_ANSWER = "no_answer"
# A label a small model puts before its question: "Question:", "Q1.", "Rewritten question -", "1)", "- ".
_LABEL = re.compile(
    r"^(?:[-*•>#]+|\d+[.)](?=\s|$)|(?:(?:the\s+)?(?:rewritten|new|paraphrased|reworded)\s+)?"
    r"(?:question|q)\s*\d*\s*[:.)-])\s*",
    re.IGNORECASE,
)
_WRAPPING = "\"'“”‘’*`_ "


def question_prompt(qtype: str):
    return load_prompt(f"querygen_{qtype}")


def clean_question(answer: str) -> str:
    """The question in a model's answer: the first line with text once leading labels ("Question:",
    "Q1.", "- ") and wrapping quotes or markup are removed, cut after its first question mark (a model
    that goes on to answer its own question is cut off), whitespace collapsed. ``""`` when none."""
    for line in answer.splitlines():
        previous = None
        while line != previous:
            previous = line
            line = _LABEL.sub("", line.strip()).strip(_WRAPPING)
        if line:
            mark = line.find("?")
            return " ".join((line[: mark + 1] if mark >= 0 else line).split())
    return ""


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at the last space before the limit (or at the limit
    when the last space comes before its first half), marked with ``[...]``."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    cut = cut if cut >= limit // 2 else limit
    return text[:cut].rstrip() + CLIP_MARK


def question_request(target: GoldTarget, title: str, text: str, settings: QuerygenSettings) -> ChatRequest:
    """The request that asks for the question of ``target`` in the document (``title``, flat ``text``)."""
    prompt = question_prompt(target.qtype)
    passages = [clip(text[start:end].strip(), settings.span_chars) for start, end in target.spans]
    if target.qtype == "multihop":
        messages = prompt.render(title=title, first_passage=passages[0], second_passage=passages[1])
    else:
        messages = prompt.render(title=title, passage=passages[0])
    return ChatRequest.of(messages, prompt_version=prompt.version_id, max_new_tokens=settings.max_new_tokens)


def paraphrase_request(question: str, settings: QuerygenSettings) -> ChatRequest:
    prompt = load_prompt(PARAPHRASE_PROMPT)
    return ChatRequest.of(
        prompt.render(question=question), prompt_version=prompt.version_id, max_new_tokens=settings.max_new_tokens
    )


def _screen(responses, span_texts, rules, referents) -> tuple[list[str], list[Verdict]]:
    """Clean and screen each response against its target's spans; a failed request is ``no_answer``."""
    texts, verdicts = [], []
    for response, spans, referent in zip(responses, span_texts, referents):
        if not response.ok:
            log.warning("no answer: %s", response.error)
            texts.append("")
            verdicts.append(Verdict(NO_ANSWER, None, None))
            continue
        question = clean_question(response.text)
        texts.append(question)
        verdicts.append(screen_question(question, spans, rules, referent))
    return texts, verdicts


def generate_candidates(
    documents: pl.DataFrame,
    paragraphs: pl.DataFrame,
    sections: pl.DataFrame,
    llm: LLM,
    settings: QuerygenSettings,
    corpus: str,
) -> pl.DataFrame:
    """The candidates (:data:`~structbench.querygen.funnel.CANDIDATES`) of the documents in ``documents``
    (``paragraphs`` and the gold ``sections`` of the same documents), in target order."""
    layouts = document_layouts(documents, paragraphs, sections, settings.min_span_words)
    targets = sample_corpus_targets(layouts, settings.types, settings.per_document, settings.seed)
    texts = document_texts(documents)
    titles = dict(zip(documents["doc_id"].to_list(), documents["title"].to_list()))
    rules = FilterRules(
        settings.rouge_max,
        settings.ngram_block,
        settings.min_query_words,
        settings.max_query_words,
        settings.require_question,
    )
    span_texts = [[texts[t.doc_id][start:end] for start, end in t.spans] for t in targets]
    referents = [titles[t.doc_id] if t.qtype == "underspecified" else None for t in targets]
    log.info(
        "%d documents, %d gold targets (%s)",
        len(layouts),
        len(targets),
        ", ".join(f"{q}: {sum(t.qtype == q for t in targets)}" for q in settings.types),
    )

    responses = llm.chat([question_request(t, titles[t.doc_id], texts[t.doc_id], settings) for t in targets])
    questions, first = _screen(responses, span_texts, rules, referents)
    passed = [index for index, verdict in enumerate(first) if verdict.passed]
    log.info("questions: %d of %d passed the filter", len(passed), len(targets))

    responses = llm.chat([paraphrase_request(questions[index], settings) for index in passed])
    paraphrases, second = _screen(responses, [span_texts[i] for i in passed], rules, [referents[i] for i in passed])
    paraphrased = dict(zip(passed, zip(paraphrases, second)))
    log.info("paraphrases: %d of %d passed the filter", sum(v.passed for v in second), len(passed))

    rows = []
    for index, target in enumerate(targets):
        paraphrase, verdict = paraphrased.get(index, (None, None))
        rejected_at = "question" if not first[index].passed else "paraphrase" if not verdict.passed else ""
        rows.append(
            {
                "qid": target.qid,
                "corpus": corpus,
                "doc_id": target.doc_id,
                "qtype": target.qtype,
                "spans": [list(span) for span in target.spans],
                "top_section_ids": list(target.top_section_ids),
                "question": questions[index],
                "question_reason": first[index].reason,
                "question_rouge_l": first[index].rouge_l,
                "question_ngrams": first[index].shared_ngrams,
                "paraphrase": paraphrase,
                "paraphrase_reason": verdict.reason if verdict else None,
                "paraphrase_rouge_l": verdict.rouge_l if verdict else None,
                "paraphrase_ngrams": verdict.shared_ngrams if verdict else None,
                "rejected_at": rejected_at,
                "reason": first[index].reason if rejected_at == "question" else verdict.reason if verdict else "",
            }
        )
    return pl.DataFrame(rows, schema=CANDIDATES) if rows else pl.DataFrame(schema=CANDIDATES)
