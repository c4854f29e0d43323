"""Unit-length vectors: the library's one L2 normalisation, and its one zero rule.

Every vector the study compares by inner product is scaled to unit length first (so inner product is
cosine): the model-free and learned inducers' paragraph and section vectors, the semantic merge's
paragraph vectors, routing's section centroids, late chunking's pooled vectors and an endpoint's
replies. :func:`unit_length` is that scaling for all of them.

**The zero rule: a vector of norm 0 comes back as zeros**, whose cosine with anything is 0 (it has no
direction to keep); every other vector, however short, comes back with norm 1. Dividing by a floor
instead (``max(norm, eps)``, torch's ``normalize``) would leave a short vector short, not unit length, and
keeping the input would keep a negative zero; an endpoint, where a zero vector means a broken reply,
rejects it before it gets here.

The norm is NumPy's own for the shape given (a vector's from its dot product with itself, a matrix's rows
by a row-wise sum), so every caller's vectors keep the bits they had when each computed its own norm
(``tests/test_vectors.py`` compares them).
"""

from __future__ import annotations

import numpy as np


def unit_length(vectors: np.ndarray) -> np.ndarray:
    """``vectors`` (one vector, or a matrix of row vectors) scaled to unit L2 length, in their own dtype; a
    vector (row) of norm 0 comes back as zeros (module docstring)."""
    vectors = np.asarray(vectors)
    if vectors.ndim == 1:
        norms = np.linalg.norm(vectors)
    elif vectors.ndim == 2:
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    else:
        raise ValueError(f"unit_length takes a vector or a matrix of rows, not an array of shape {vectors.shape}")
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
