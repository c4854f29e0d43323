"""The learned inducer's trained model and its file: data, never code (docs/method.md §5, "Learned inducer").

A trained model is arrays and a few settings: each boosted classifier's trees as node arrays (the feature
and threshold of a split, its children, a leaf's value), the recurring-title classifier's coefficients, the
chosen thresholds, the title names and the training summary. Predictions come from those arrays
(:meth:`TreeEnsemble.probability`, :meth:`TitleClassifier.probabilities`), computed as scikit-learn computes
them and in the same order of operations, so a model read back predicts the very bytes its fitted
estimators did; reading or using a model imports no scikit-learn.

**The file** (format :data:`~.model_file.FORMAT`) is written by :meth:`LearnedInducer.save` and read by
:func:`load_learned_inducer`, a thin composition over :mod:`.model_file`, which holds the format, checks the
file's header, length and sha256 (the model's :attr:`~LearnedInducer.fingerprint`) and reads the payload's
arrays as hostile, each within its bound before anything of that size is allocated. Here the arrays become a
model: every tree's shape is checked (children after their parent and inside their tree, split features in
range), so that prediction cannot loop or index out of bounds, and every title name (:func:`title_problem`:
one line, within the induced titles' bound). Every failure is a :class:`~.model_file.ModelFileError` naming
the file and what is wrong. Whether the title classifier reads vectors as wide as the embedder gives
(:attr:`LearnedInducer.vector_width`) is checked where the embedder is known: the config checks
(``structbench.crosskeys.check_title_width``) and the induction's first vectors.
"""

from __future__ import annotations

import hashlib
import json
import math
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from structbench.graphemes import bounded_title
from structbench.structure.learned_features import FEATURES, TITLE_POSITION, title_feature_width
from structbench.structure.model_file import (
    FORMAT,
    MAGIC,
    SETTINGS,
    TREE_ARRAYS,
    ModelFileError,
    archive_members,
    canonical_json,
    npz_bytes,
    read_model_file,
    verified_payload,
)
from structbench.structure.sections import TITLE_CHARS

TIMING_KEYS = ("seconds", "fit_seconds", "embedding_seconds")  # left out of the file: they vary run to run


# ------------------------------------------------------------------------------------------ estimators


@dataclass(frozen=True)
class ConstantProbability:
    """The probability of a label that had one class in training: ``p`` for every row."""

    p: float

    def probability(self, x: np.ndarray) -> np.ndarray:
        return np.full(len(x), self.p)


@dataclass(frozen=True, eq=False)
class TreeEnsemble:
    """A boosted binary classifier as node arrays: tree ``t`` holds nodes ``tree_starts[t]`` up to
    ``tree_starts[t + 1]``, its root first; a split sends a row left when its ``feature`` is at most
    ``threshold`` (a missing value: ``missing_left``); ``left`` and ``right`` are node indices in the same
    arrays; a leaf's ``value`` is its contribution to the raw score, which starts at ``baseline``."""

    baseline: float
    tree_starts: np.ndarray
    value: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    missing_left: np.ndarray
    left: np.ndarray
    right: np.ndarray
    is_leaf: np.ndarray

    @classmethod
    def from_fitted(cls, estimator) -> TreeEnsemble:
        """The arrays of a fitted binary ``HistGradientBoostingClassifier`` on numeric features (read from its
        predictors' node records and baseline, private attributes: the byte-identity test on QASPER papers
        fails if a scikit-learn release changes them)."""
        if estimator.n_trees_per_iteration_ != 1 or [int(c) for c in estimator.classes_] != [0, 1]:
            raise ValueError(f"a tree ensemble is a binary 0/1 classifier, got classes {list(estimator.classes_)}")
        trees = [predictor.nodes for iteration in estimator._predictors for predictor in iteration]
        if any(tree["is_categorical"].any() for tree in trees):
            raise ValueError("a tree ensemble splits numeric features only")
        starts = np.cumsum([0] + [len(tree) for tree in trees]).astype(np.int64)
        nodes = np.concatenate(trees)
        offset = np.repeat(starts[:-1], [len(tree) for tree in trees])
        return cls(
            baseline=float(estimator._baseline_prediction.reshape(-1)[0]),
            tree_starts=starts,
            value=nodes["value"].astype(np.float64),
            feature=nodes["feature_idx"].astype(np.int64),
            threshold=nodes["num_threshold"].astype(np.float64),
            missing_left=nodes["missing_go_to_left"].astype(np.uint8),
            left=np.where(nodes["is_leaf"], 0, nodes["left"].astype(np.int64) + offset),
            right=np.where(nodes["is_leaf"], 0, nodes["right"].astype(np.int64) + offset),
            is_leaf=nodes["is_leaf"].astype(np.uint8),
        )

    def probability(self, x: np.ndarray) -> np.ndarray:
        """The probability of class 1 for each row of ``x``: the sigmoid of ``baseline`` plus each tree's
        leaf value, added tree by tree as scikit-learn adds them (byte-identical to its ``predict_proba``)."""
        from scipy.special import expit

        raw = np.zeros(len(x))
        raw += self.baseline
        is_leaf = self.is_leaf.astype(bool)
        missing_left = self.missing_left.astype(bool)
        for start in self.tree_starts[:-1]:
            node = np.full(len(x), start, np.int64)
            open_rows = np.flatnonzero(~is_leaf[node])
            while len(open_rows):  # children come after their parent: at most one step per node
                current = node[open_rows]
                values = x[open_rows, self.feature[current]]
                go_left = np.where(np.isnan(values), missing_left[current], values <= self.threshold[current])
                node[open_rows] = np.where(go_left, self.left[current], self.right[current])
                open_rows = open_rows[~is_leaf[node[open_rows]]]
            raw += self.value[node]
        return expit(raw)

    def arrays(self) -> dict[str, np.ndarray]:
        return {
            "baseline": np.array(self.baseline, np.float64),
            "tree_starts": self.tree_starts,
            **{name: getattr(self, name) for name in TREE_ARRAYS},
        }


@dataclass(frozen=True, eq=False)
class TitleClassifier:
    """A multinomial logistic regression as arrays: ``coef`` (one row for two classes, one per class
    above two), ``intercept`` and the ``classes`` (0: any other title, ``k``: the model's ``k``-th name)."""

    coef: np.ndarray
    intercept: np.ndarray
    classes: np.ndarray

    @classmethod
    def from_fitted(cls, estimator) -> TitleClassifier:
        return cls(
            coef=np.array(estimator.coef_, np.float64),
            intercept=np.array(estimator.intercept_, np.float64),
            classes=np.array(estimator.classes_, np.int64),
        )

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        """Each row's probability of each class, as scikit-learn's ``predict_proba`` computes it (a sigmoid
        for two classes, a softmax above two; byte-identical)."""
        from scipy.special import expit

        if x.shape[1] != self.coef.shape[1]:
            raise ValueError(
                f"the learned title classifier reads {self.coef.shape[1]} features per section and was given "
                f"{x.shape[1]}: the model was trained with vectors of another size (another embedder)"
            )
        scores = x @ self.coef.T + self.intercept
        if len(self.classes) <= 2:
            p = expit(scores.reshape(-1))
            return np.stack([1 - p, p], axis=1)
        scores -= scores.max(axis=1).reshape((-1, 1))
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=1).reshape((-1, 1))
        return scores

    def arrays(self) -> dict[str, np.ndarray]:
        return {"coef": self.coef, "intercept": self.intercept, "classes": self.classes}


Probability = TreeEnsemble | ConstantProbability


def one_thread():
    """scikit-learn's OpenMP and BLAS pools held to one thread, for fitting and for the title classifier's
    product: on shared cores OpenMP's busy waiting made boosting fits many times slower than one thread
    (docs/benchmarks.md)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1)


# ---------------------------------------------------------------------------------------------- model


@dataclass(frozen=True, eq=False)
class LearnedInducer:
    """A trained learned inducer: the ``boundary`` and ``level`` probabilities, the recurring-title
    classifier (None without recurring titles) and the names of its classes, the chosen thresholds, and the
    JSON-able ``training`` summary. :attr:`fingerprint` is the sha256 of the model file's payload."""

    boundary: Probability
    level: Probability
    titles: TitleClassifier | None
    title_names: tuple[str, ...]
    threshold: float
    level_threshold: float
    training: dict
    features: tuple[str, ...] = FEATURES
    _payload: list[bytes] = field(default_factory=list, repr=False)  # the payload, once built

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(self.payload()).hexdigest()

    @property
    def vector_width(self) -> int | None:
        """The width of the embedder's vectors the title classifier reads (two per section, then
        :data:`~.learned_features.TITLE_POSITION`): the embedder the model was trained with must give
        vectors this wide. None without a title classifier."""
        return None if self.titles is None else (self.titles.coef.shape[1] - len(TITLE_POSITION)) // 2

    def check_vector_width(self, width: int, embedder: str) -> None:
        """A ``ValueError`` unless ``embedder``'s vectors, ``width`` wide, are the ones the title classifier
        reads (:attr:`vector_width`): a model trained with another embedder would fail at its first title."""
        if self.vector_width is not None and width != self.vector_width:
            raise ValueError(
                f"the learned inducer's title classifier reads vectors of {self.vector_width} dimensions "
                f"({title_feature_width(self.vector_width)} features per section), and {embedder} gives vectors "
                f"of {width}: the model was trained with another embedder; use that one, or train it again"
            )

    def payload(self) -> bytes:
        """The model file's payload: the ``.npz`` archive of the arrays and settings (module docstring)."""
        if not self._payload:
            settings = {
                "features": list(self.features),
                "title_names": list(self.title_names),
                "threshold": self.threshold,
                "level_threshold": self.level_threshold,
                "training": {k: v for k, v in self.training.items() if k not in TIMING_KEYS},
            }
            members = {SETTINGS: np.frombuffer(canonical_json(settings), np.uint8)}
            for name, estimator in (("boundary", self.boundary), ("level", self.level), ("titles", self.titles)):
                if isinstance(estimator, ConstantProbability):
                    members[f"{name}.constant"] = np.array(estimator.p, np.float64)
                elif estimator is not None:
                    members.update({f"{name}.{key}": array for key, array in estimator.arrays().items()})
            self._payload.append(npz_bytes(members))
        return self._payload[0]

    def save(self, path: str | Path) -> None:
        """Write the model file: magic line, header line, payload."""
        payload = self.payload()
        header = {"format": FORMAT, "payload_bytes": len(payload), "payload_sha256": self.fingerprint}
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_bytes(MAGIC + canonical_json(header) + b"\n" + payload)


# -------------------------------------------------------------------------------------------- reading


def load_learned_inducer(path: str | Path) -> LearnedInducer:
    """The model in a file written by :meth:`LearnedInducer.save`, checked before use (module docstring);
    a :class:`ModelFileError` naming the file for one that is not such a model or not intact."""
    payload = verified_payload(read_model_file(path), path)
    members = archive_members(payload, path)
    return model_from_members(members, path, payload)


def model_from_members(members: dict[str, np.ndarray], path: str | Path, payload: bytes) -> LearnedInducer:
    """The model the archive's members state, each checked (dtype, shape, ranges) before use."""

    def bad(problem: str) -> ModelFileError:
        return ModelFileError(path, f"not a usable model: {problem}")

    settings_bytes = members.pop(SETTINGS, None)
    if settings_bytes is None or settings_bytes.dtype != np.uint8 or settings_bytes.ndim != 1:
        raise bad(f"no {SETTINGS!r} member of bytes")
    try:
        settings = json.loads(settings_bytes.tobytes().decode("utf-8"))
    except (ValueError, RecursionError):
        raise bad(f"its {SETTINGS!r} are not JSON") from None
    if not isinstance(settings, dict):
        raise bad(f"its {SETTINGS!r} are not a JSON object")
    if settings.get("features") != list(FEATURES):
        raise bad(f"trained on features {settings.get('features')}, this code computes {list(FEATURES)}")
    thresholds = [settings.get("threshold"), settings.get("level_threshold")]
    if not all(isinstance(t, (int, float)) and 0 <= t <= 1 for t in thresholds):
        raise bad(f"thresholds {thresholds} are not probabilities")
    names = settings.get("title_names")
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise bad("title_names is not a list of strings")
    for index, name in enumerate(names):
        problem = title_problem(name)
        if problem:
            shown = name if len(name) <= 40 else name[:40] + "..."
            raise bad(f"title_names[{index}] {shown!r} {problem}")
    if not isinstance(settings.get("training"), dict):
        raise bad("no training summary")
    boundary = read_probability(members, "boundary", bad)
    level = read_probability(members, "level", bad)
    titles = read_titles(members, len(names), bad)
    if members:
        raise bad(f"unexpected members {sorted(members)}")
    return LearnedInducer(
        boundary=boundary,
        level=level,
        titles=titles,
        title_names=tuple(names),
        threshold=float(settings["threshold"]),
        level_threshold=float(settings["level_threshold"]),
        training=settings["training"],
        _payload=[payload],
    )


def take(members: dict[str, np.ndarray], name: str, dtype: str, ndim: int, bad) -> np.ndarray:
    """Member ``name`` (removed from ``members``) if it has the ``dtype`` and number of dimensions."""
    array = members.pop(name, None)
    if array is None:
        raise bad(f"no member {name!r}")
    if array.dtype.str != dtype or array.ndim != ndim:
        raise bad(f"member {name!r} is {array.dtype.str}, {array.ndim}-dimensional; expected {dtype}, {ndim}")
    return array


def read_probability(members: dict[str, np.ndarray], name: str, bad) -> Probability:
    """The boundary or level probability: a constant or a tree ensemble whose every tree is well formed."""
    if f"{name}.constant" in members:
        p = float(take(members, f"{name}.constant", "<f8", 0, bad))
        if not 0 <= p <= 1:
            raise bad(f"{name}.constant {p} is not a probability")
        return ConstantProbability(p)
    baseline = float(take(members, f"{name}.baseline", "<f8", 0, bad))
    starts = take(members, f"{name}.tree_starts", "<i8", 1, bad)
    nodes = {key: take(members, f"{name}.{key}", dtype, 1, bad) for key, dtype in TREE_ARRAYS.items()}
    n_nodes = len(nodes["value"])
    if any(len(array) != n_nodes for array in nodes.values()):
        raise bad(f"{name}'s node arrays differ in length")
    if len(starts) < 2 or starts[0] != 0 or starts[-1] != n_nodes or np.any(np.diff(starts) < 1):
        raise bad(f"{name}.tree_starts do not divide its {n_nodes} nodes into trees")
    if not math.isfinite(baseline) or not np.isfinite(nodes["value"]).all():
        raise bad(f"{name} has a value that is not finite")
    split = nodes["is_leaf"] == 0
    tree_end = np.repeat(starts[1:], np.diff(starts))
    index = np.arange(n_nodes)
    for child in ("left", "right"):
        inside = (nodes[child] > index) & (nodes[child] < tree_end)
        if not inside[split].all():
            raise bad(f"{name} has a split whose {child} child is not after it in its tree")
    if not ((nodes["feature"][split] >= 0) & (nodes["feature"][split] < len(FEATURES))).all():
        raise bad(f"{name} splits on a feature outside the {len(FEATURES)} features")
    if (nodes["is_leaf"] > 1).any() or (nodes["missing_left"] > 1).any():
        raise bad(f"{name} has a flag that is neither 0 nor 1")
    return TreeEnsemble(baseline, starts, **nodes)


def read_titles(members: dict[str, np.ndarray], n_names: int, bad) -> TitleClassifier | None:
    """The recurring-title classifier, or None when the file has none."""
    if not any(name.startswith("titles.") for name in members):
        return None
    coef = take(members, "titles.coef", "<f8", 2, bad)
    intercept = take(members, "titles.intercept", "<f8", 1, bad)
    classes = take(members, "titles.classes", "<i8", 1, bad)
    rows = 1 if len(classes) == 2 else len(classes)
    if len(classes) < 2 or coef.shape[0] != rows or len(intercept) != rows or not np.isfinite(coef).all():
        raise bad(f"the title classifier's {len(classes)} classes do not fit its coefficients {coef.shape}")
    vectors = coef.shape[1] - len(TITLE_POSITION)
    if vectors < 2 or vectors % 2:
        raise bad(
            f"the title classifier reads {coef.shape[1]} features per section, not two vectors and "
            f"{len(TITLE_POSITION)} position features"
        )
    if not ((classes >= 0) & (classes <= n_names)).all() or len(set(classes.tolist())) != len(classes):
        raise bad(f"title classes {classes.tolist()} are not distinct among 0..{n_names}")
    return TitleClassifier(coef, intercept, classes)


# Control characters (newlines, tabs, escapes) and the line and paragraph separators: what would break a
# title out of its one line of a heading path, a prefix or a Markdown export.
LINE_BREAKING = frozenset({"Cc", "Zl", "Zp"})


def title_problem(title: str) -> str | None:
    """Why ``title`` cannot be a learned title, or None: it is empty, longer than the bound of every
    induced title (:data:`~structbench.structure.induction.TITLE_CHARS` characters), or holds a control
    character or line break (a title is one line: a newline in it would open a line, or a heading, in
    every path and prefix of its sections). :func:`printable_title` makes a gold heading pass."""
    if not title.strip():
        return "is empty"
    if len(title) > TITLE_CHARS:
        return f"holds {len(title)} characters, above the {TITLE_CHARS} an induced title holds"
    control = next((c for c in title if unicodedata.category(c) in LINE_BREAKING), None)
    if control is not None:
        return f"holds the control character {control!r} (U+{ord(control):04X}): a title is one line"
    return None


def printable_title(title: str) -> str:
    """``title`` as a learned title holds it (:func:`title_problem`): every run of whitespace, line breaks
    included, one space; other control characters dropped; cut to the induced titles' bound as the LLM
    inducer's repair cuts (:func:`~structbench.graphemes.bounded_title`). Empty when nothing printable is
    left."""
    line = "".join(c for c in " ".join(title.split()) if unicodedata.category(c) not in LINE_BREAKING)
    return bounded_title(line, TITLE_CHARS)
