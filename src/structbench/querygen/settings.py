"""The settings of query generation: config ``querygen`` (config/README.md documents every key)."""

from __future__ import annotations

from dataclasses import dataclass, fields

from structbench.datamodel import QUERY_TYPES
from structbench.defaults import NGRAM_BLOCK, QUERIES_PER_DOCUMENT, QUERIES_PER_TYPE, ROUGE_MAX, SEED

__all__ = ["QUERY_TYPES", "QuerygenSettings"]


@dataclass(frozen=True)
class QuerygenSettings:
    """Every threshold of the protocol (:mod:`structbench.querygen`).

    ``types``: which query types are generated; ``per_document``: gold targets sampled per document and
    type; ``per_type``: balanced finals per type; ``rouge_max``: the largest ROUGE-L F1 a query may have
    against its gold span; ``ngram_block``: the n-gram length that must not be shared with the span;
    ``seed``: span sampling and balancing; ``min_span_words``: the fewest words a paragraph (or a
    top-level section) needs to be a gold span; ``span_chars``: how many characters of a span the prompt
    shows (longer spans, mostly whole sections, are cut at a word boundary); ``min_query_words`` /
    ``max_query_words``: a question outside these word counts is rejected; ``require_question``: a
    question without a question mark is rejected; ``max_new_tokens``: the model's cap per question or
    paraphrase."""

    types: tuple[str, ...] = QUERY_TYPES
    per_document: int = QUERIES_PER_DOCUMENT
    per_type: int = QUERIES_PER_TYPE
    rouge_max: float = ROUGE_MAX
    ngram_block: int = NGRAM_BLOCK
    seed: int = SEED
    min_span_words: int = 25
    span_chars: int = 4000
    min_query_words: int = 3
    max_query_words: int = 40
    require_question: bool = True
    max_new_tokens: int = 64

    def __post_init__(self):
        unknown = [qtype for qtype in self.types if qtype not in QUERY_TYPES]
        if unknown or not self.types or len(set(self.types)) != len(self.types):
            raise ValueError(f"querygen.types must be distinct values of {list(QUERY_TYPES)}, got {list(self.types)}")
        if not 0.0 <= self.rouge_max <= 1.0:
            raise ValueError(f"querygen.rouge_max must lie in [0, 1], got {self.rouge_max}")
        for name in (
            "per_document",
            "per_type",
            "ngram_block",
            "min_span_words",
            "span_chars",
            "min_query_words",
            "max_new_tokens",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"querygen.{name} must be >= 1, got {getattr(self, name)}")
        if self.max_query_words < self.min_query_words:
            raise ValueError(
                f"querygen.max_query_words ({self.max_query_words}) is below querygen.min_query_words "
                f"({self.min_query_words})"
            )

    @classmethod
    def from_config(cls, section: dict, global_seed: int = SEED) -> QuerygenSettings:
        """From the filled config ``querygen`` section; ``seed: null`` takes the study's global seed, and
        ``llm`` (which model runs) is not a setting of the protocol."""
        known = {f.name for f in fields(cls)}
        values = {key: value for key, value in section.items() if key in known}
        unknown = sorted(set(section) - known - {"llm"})
        if unknown:
            raise ValueError(f"querygen: unknown key(s) {unknown}")
        if values.get("seed") is None:
            values["seed"] = global_seed
        if "types" in values:
            values["types"] = tuple(values["types"])
        return cls(**values)

    def as_config(self) -> dict:
        return {
            f.name: (list(getattr(self, f.name)) if f.name == "types" else getattr(self, f.name)) for f in fields(self)
        }
