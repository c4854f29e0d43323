"""A deterministic stand-in encoder and topic-shift documents for the model-free inducer's tests."""

import hashlib
import re

import numpy as np

from structbench.corpus.build import build_tables
from structbench.datamodel import ParsedDocument, SectionSpec

DIMENSION = 512


class HashedBagOfWords:
    """A deterministic stand-in encoder: word counts hashed into DIMENSION buckets, L2-normalised (a text
    without a word is the zero vector). Records every call's texts."""

    def __init__(self):
        self.calls: list[list[str]] = []

    def __call__(self, texts):
        self.calls.append(list(texts))
        rows = np.zeros((len(texts), DIMENSION), np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                rows[row, int(hashlib.sha256(word.encode()).hexdigest()[:8], 16) % DIMENSION] += 1
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        return np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)


TOPICS = {
    "volcano": "volcano lava magma eruption crater ash basalt",
    "violin": "violin orchestra concerto bow strings melody symphony",
    "compiler": "compiler parser bytecode register optimisation syntax lexer",
}


def topic_paragraph(topic: str, variant: int) -> str:
    """A paragraph about one topic: its words rotated by ``variant``, so paragraphs differ but share words."""
    words = TOPICS[topic].split()
    rotated = words[variant % len(words) :] + words[: variant % len(words)]
    return f"The {rotated[0]} and the {rotated[1]} with {' '.join(rotated[2:5])}. A {rotated[5]} of {rotated[6]}."


def three_topic_document(per_topic: int = 4) -> list[str]:
    return [topic_paragraph(topic, variant) for topic in TOPICS for variant in range(per_topic)]


NAMES = list(TOPICS)


def topic_documents(doc_numbers, per_topic=(3, 4, 5)):
    """Corpus tables of documents of three topic sections (rotated topic order, varying lengths), each headed
    by its topic's name."""
    parsed = []
    for d in doc_numbers:
        topics = NAMES[d % 3 :] + NAMES[: d % 3]
        texts, specs = [], []
        for i, topic in enumerate(topics):
            count = per_topic[(d + i) % len(per_topic)]
            specs.append(SectionSpec(f"{i + 1} {topic.title()}", 1, len(texts), len(texts) + count))
            texts += [topic_paragraph(topic, d + v) for v in range(count)]
        parsed.append(ParsedDocument(f"doc{d}", f"Document {d}", texts, specs))
    return build_tables("test", parsed)


# ----------------------------------------------------------------------------------------- curve steps
