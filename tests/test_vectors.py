"""structbench.vectors.unit_length, the one L2 normalisation: unit rows, the zero rule, and the same bytes as the
arithmetic each caller had before it (kept here verbatim as the reference), on random and zero rows."""

import numpy as np
import pytest

from structbench.embedding.late import _normalised
from structbench.endpoints.embeddings import normalized_rows
from structbench.http import EndpointVectorError
from structbench.retrieval.routing import section_centroids
from structbench.structure.learned_features import title_features
from structbench.vectors import unit_length

# ---- each caller's own arithmetic before unit_length, verbatim


def old_rows_zero_out(vectors):  # structure/model_free.normalise_rows, retrieval/routing.section_centroids
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)


def old_rows_divide_by_one(vectors):  # chunking/structural.semantic_chunks
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0)


def old_vector_keep_zero(mean):  # structure/learned_features.title_features
    norm = np.linalg.norm(mean)
    return mean / norm if norm > 0 else mean


def old_vector_floor(total, count):  # embedding/late._normalised
    mean = total / count
    return (mean / max(np.linalg.norm(mean), 1e-12)).astype(np.float32)


def old_endpoint_rows(array):  # endpoints/embeddings.normalized_rows, after its zero and finiteness check
    norms = np.linalg.norm(array, axis=1)
    return (array / norms[:, None]).astype(np.float32)


def old_centroids(chunk_vectors, chunk_unit, n_units):
    vectors = np.asarray(chunk_vectors, dtype=np.float64)
    sums = np.zeros((n_units, vectors.shape[1]), dtype=np.float64)
    np.add.at(sums, chunk_unit, vectors)
    counts = np.bincount(chunk_unit, minlength=n_units)
    has_chunks = counts > 0
    means = np.divide(sums, counts[:, None], out=np.zeros_like(sums), where=has_chunks[:, None])
    return old_rows_zero_out(means).astype(np.float32), has_chunks


def old_title_features(vectors, spans, n_paragraphs):
    rows = []
    for index, (first, end, level) in enumerate(spans):
        mean = vectors[first:end].sum(axis=0)
        norm = np.linalg.norm(mean)
        extra = [first / n_paragraphs, end / n_paragraphs, float(index == 0), float(index == len(spans) - 1)]
        extra.append(float(level > 1))
        rows.append(np.concatenate([vectors[first], mean / norm if norm > 0 else mean, extra]))
    return np.asarray(rows, np.float64)


def random_rows(dtype, n=3000, width=384, seed=0):
    """Random rows at many scales (norms from about 1e-6 to 1e6), with zero rows among them."""
    rng = np.random.default_rng(seed)
    rows = rng.standard_normal((n, width)) * 10.0 ** rng.uniform(-6, 6, size=(n, 1))
    rows[::97] = 0.0
    return rows.astype(dtype)


def same_bytes(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_rows_keep_the_bytes_of_every_row_callers_arithmetic(dtype):
    rows = random_rows(dtype)
    assert same_bytes(unit_length(rows), old_rows_zero_out(rows))
    assert same_bytes(unit_length(rows), old_rows_divide_by_one(rows))
    finite_nonzero = rows[np.linalg.norm(rows, axis=1) > 0].astype(np.float64)
    assert same_bytes(unit_length(finite_nonzero).astype(np.float32), old_endpoint_rows(finite_nonzero))


def test_single_vectors_keep_the_bytes_of_the_pooled_and_section_means():
    """A single vector's norm is its dot product with itself, as late chunking's pooling and the learned
    inducer's section mean computed it; a row-wise norm differs from it in the last bit for about one vector
    in six, which is why :func:`unit_length` keeps NumPy's norm per shape."""
    rows = random_rows(np.float64, n=2000)
    counts = np.arange(1, len(rows) + 1)
    assert all(same_bytes(_normalised(row, count), old_vector_floor(row, count)) for row, count in zip(rows, counts))
    assert all(same_bytes(unit_length(row), old_vector_keep_zero(row)) for row in rows)
    by_rows = unit_length(rows)
    assert any(not same_bytes(by_rows[i], unit_length(rows[i])) for i in range(len(rows)))  # why per shape


def test_the_callers_give_what_they_gave():
    rng = np.random.default_rng(1)
    vectors = random_rows(np.float32, n=400, width=64, seed=2)
    units = rng.integers(0, 90, size=len(vectors))
    units[units == 7] = 8  # unit 7 gets no chunk: a zero row, has_chunks False
    new, old = section_centroids(vectors, units, 90), old_centroids(vectors, units, 90)
    assert same_bytes(new[0], old[0]) and np.array_equal(new[1], old[1]) and not new[1][7]

    reply = random_rows(np.float64, n=300, width=64, seed=3)
    reply = reply[np.linalg.norm(reply, axis=1) > 0]
    assert same_bytes(normalized_rows(reply.tolist(), "http://x/embeddings", "batch 1"), old_endpoint_rows(reply))

    paragraphs = unit_length(random_rows(np.float64, n=12, width=16, seed=4))
    spans = [(0, 12, 1), (0, 5, 2), (5, 6, 2), (6, 12, 2)]
    assert same_bytes(title_features(paragraphs, spans, 12), old_title_features(paragraphs, spans, 12))


def test_the_zero_rule_zero_in_zero_out_and_every_other_vector_at_unit_length():
    assert unit_length(np.zeros(4)).tolist() == [0.0] * 4
    rows = unit_length(np.array([[3.0, 4.0], [0.0, 0.0], [-0.0, -0.0], [3e-20, 4e-20]]))
    assert rows[0].tolist() == [0.6, 0.8] and rows[3].tolist() == pytest.approx([0.6, 0.8])
    assert rows[1:3].tolist() == [[0.0, 0.0], [0.0, 0.0]] and not np.signbit(rows[2]).any()  # zeros, never -0.0
    # Where the old arithmetic differed from this rule: a floor left a short vector short, and dividing by 1
    # kept a negative zero; neither occurs in a vector the study stores (a pooled mean of model outputs, a
    # centroid of unit vectors).
    tiny = np.array([3e-20, 4e-20])
    assert np.linalg.norm(old_vector_floor(tiny, 1)) < 1e-7 and np.linalg.norm(unit_length(tiny)) == pytest.approx(1)
    assert np.signbit(old_rows_divide_by_one(np.array([[-0.0, -0.0]]))).all()


def test_an_endpoint_still_rejects_a_zero_vector_before_normalising():
    with pytest.raises(EndpointVectorError, match="input 1 came back non-finite or zero"):
        normalized_rows([[1.0, 0.0], [0.0, 0.0]], "http://x/embeddings", "batch 3")


def test_unit_length_names_a_shape_it_does_not_take():
    with pytest.raises(ValueError, match=r"shape \(2, 2, 2\)"):
        unit_length(np.ones((2, 2, 2)))
