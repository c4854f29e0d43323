"""Secondary mixed-effects check (docs/method.md §11; Kuehlkamp et al., appendix D.4), statsmodels MixedLM.

Two models of the long table (one row per query x condition, the two conditions of a contrast,
queries scored under both):

- pre-registered:  ``score ~ 1 + treated + (1 | doc)``. Misspecified on purpose: the design is paired
  within query but the model has no query effect, so query-to-query variance lands in the residual and
  the test is conservative (the paper discloses this).
- nested respecification: ``score ~ 1 + treated + (1 | doc) + (1 | doc:query)``: a random intercept per
  document plus a variance component for each query nested in its document (statsmodels
  ``vc_formula={"query": "0 + C(qid)"}`` with ``groups = doc``, built here directly as a ``VCSpec`` so no
  formula is parsed per document).

Both are fitted by REML with statsmodels' default optimizer sequence (bfgs, lbfgs, cg). A fit that fails
to converge, raises, or yields a non-finite p-value returns ``p = NaN`` with the reason in ``note``;
warnings that do not invalidate the fixed-effect test (a variance component on the boundary) are kept
in ``note`` next to a finite p.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class MixedLMFit:
    """p-value and coefficient of ``treated``; ``note`` says why p is NaN or what the fit warned."""

    p: float
    coef: float
    converged: bool
    note: str


def _nan(note: str) -> MixedLMFit:
    return MixedLMFit(float("nan"), float("nan"), False, note)


def _summarize(messages: list[str]) -> str:
    seen: list[str] = []
    for message in messages:
        short = message.strip().splitlines()[0][:120]
        if short not in seen:
            seen.append(short)
    return "; ".join(seen)


def mixedlm_treatment_p(score, treated, doc_id, qid=None, *, nested: bool = False) -> MixedLMFit:
    """Fit the pre-registered (``nested=False``) or nested model and return the ``treated`` p-value.

    ``score``, ``treated`` (0 control / 1 treatment), ``doc_id`` and, for ``nested=True``, ``qid`` are
    aligned arrays of the long table. Deterministic: rows are put in a canonical order (doc, qid,
    treated) before fitting.
    """
    from statsmodels.regression.mixed_linear_model import MixedLM, VCSpec

    score = np.asarray(score, dtype=np.float64)
    treated = np.asarray(treated, dtype=np.float64)
    doc_id = np.asarray(doc_id).astype(str)
    if len(score) < 4 or len(np.unique(treated)) < 2:
        return _nan("too few rows or only one condition")
    if nested and qid is None:
        raise ValueError("the nested model needs qid")
    qid_arr = np.asarray(qid).astype(str) if qid is not None else np.zeros(len(score), dtype=str)
    order = np.lexsort((treated, qid_arr, doc_id))
    score, treated, doc_id, qid_arr = score[order], treated[order], doc_id[order], qid_arr[order]
    groups, group_code = np.unique(doc_id, return_inverse=True)
    if len(groups) < 2:
        return _nan("fewer than two documents")
    exog = np.column_stack([np.ones(len(score)), treated])
    exog_vc = None
    if nested:
        bounds = np.flatnonzero(np.diff(group_code)) + 1
        starts = np.concatenate(([0], bounds))
        ends = np.concatenate((bounds, [len(score)]))
        mats, names = [], []
        for start, end in zip(starts, ends):  # one small block per document, not per row
            labels, local = np.unique(qid_arr[start:end], return_inverse=True)
            mats.append(np.eye(len(labels))[local])
            names.append([f"C(qid)[{label}]" for label in labels])
        exog_vc = VCSpec(["query"], [names], [mats])
    caught: list[str] = []
    try:
        with warnings.catch_warnings(record=True) as records:
            warnings.simplefilter("always")
            model = MixedLM(score, exog, groups=group_code, exog_vc=exog_vc)
            result = model.fit(reml=True)
            p = float(np.asarray(result.pvalues)[1])
            coef = float(np.asarray(result.fe_params)[1])
            converged = bool(getattr(result, "converged", True))
        caught = [str(r.message) for r in records]
    except (np.linalg.LinAlgError, ValueError, FloatingPointError, ZeroDivisionError) as error:
        return _nan(f"fit failed: {type(error).__name__}: {error}"[:200])
    note = _summarize(caught)
    if not converged:
        return MixedLMFit(float("nan"), coef, False, "not converged" + (f": {note}" if note else ""))
    if not np.isfinite(p):
        return MixedLMFit(
            float("nan"), coef, converged, "singular fit (non-finite standard error)" + (f": {note}" if note else "")
        )
    return MixedLMFit(p, coef, converged, note)
