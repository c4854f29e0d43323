"""A deterministic stand-in encoder and topic-shift documents for the model-free inducer's tests."""

import hashlib
import re

import numpy as np

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


# ----------------------------------------------------------------------------------------- curve steps
