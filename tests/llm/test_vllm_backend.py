"""The vLLM backend. vLLM runs only on a GPU node; here the request building is tested without it, the
real run skips when ``import vllm`` fails, and the keyword names can be checked against a vLLM wheel's
source (``STRUCTBENCH_VLLM_WHEEL=/path/vllm-0.33.0-*.whl``; from ``pip download vllm==0.33.0 --no-deps``)."""

import ast
import importlib.util
import os
import zipfile

import pytest
from llm_testing import build_tiny_model

from structbench.llm import ChatRequest, LLMSpec, load_llm, weights_fingerprint
from structbench.llm.vllm_backend import engine_kwargs, model_identity, sampling_kwargs

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def test_sampling_kwargs_carry_the_schema_as_structured_output():
    spec = LLMSpec("vllm", "m", seed=11)
    request = ChatRequest.of([{"role": "user", "content": "hi"}], schema=SCHEMA)
    assert sampling_kwargs(spec, request, 64) == {
        "temperature": 0.0,
        "seed": 11,
        "max_tokens": 64,
        "structured_outputs": {"json": SCHEMA},
    }
    free = ChatRequest.of([{"role": "user", "content": "hi"}])
    assert "structured_outputs" not in sampling_kwargs(spec, free, 64)


def test_engine_kwargs():
    spec = LLMSpec("vllm", "org/model", revision="abc", context_tokens=4096, gpu_memory_utilization=0.5)
    assert engine_kwargs(spec) == {
        "model": "org/model",
        "seed": spec.seed,
        "dtype": "auto",
        "gpu_memory_utilization": 0.5,
        "tensor_parallel_size": 1,
        "enable_prefix_caching": True,
        "revision": "abc",
        "max_model_len": 4096,
    }
    assert engine_kwargs(LLMSpec("vllm", "m", prefix_reuse=False))["enable_prefix_caching"] is False


def test_model_identity(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    assert model_identity(LLMSpec("vllm", str(tmp_path))) == {
        "model": str(tmp_path),
        "weights": weights_fingerprint(tmp_path),
    }
    assert model_identity(LLMSpec("vllm", "org/m", revision="r1"))["weights"] == "hub@r1"
    with pytest.raises(ValueError, match="'no-such-org/no-such-model' is neither a local directory"):
        model_identity(LLMSpec("vllm", "no-such-org/no-such-model"))


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed here")
def test_missing_vllm_is_a_clear_error(tmp_path):
    with pytest.raises(ImportError, match="the vllm backend needs the vllm package on a GPU node"):
        load_llm({"backend": "vllm", "model": str(tmp_path)})


def test_vllm_generates_schema_valid_json(tmp_path):
    pytest.importorskip("vllm", reason="vllm is not installed (it needs a CUDA GPU node)")
    model = build_tiny_model(tmp_path / "model")
    llm = load_llm(
        {"backend": "vllm", "model": str(model), "max_new_tokens": 32, "gpu_memory_utilization": 0.2}, tmp_path / "llm"
    )
    responses = llm.chat([ChatRequest.of([{"role": "user", "content": f"n {k}"}], schema=SCHEMA) for k in range(3)])
    assert all(r.ok or r.finish_reason == "length" for r in responses)
    assert any(r.ok and isinstance(r.value["n"], int) for r in responses)


def _signature(source: str, class_name: str, method: str | None = None) -> set[str]:
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            if method is None:  # dataclass-style fields
                return {item.target.id for item in node.body if isinstance(item, ast.AnnAssign)}
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == method:
                    return {arg.arg for arg in item.args.args + item.args.kwonlyargs}
    raise AssertionError(f"{class_name}.{method} not found")


@pytest.mark.skipif(not os.environ.get("STRUCTBENCH_VLLM_WHEEL"), reason="set STRUCTBENCH_VLLM_WHEEL to a vllm wheel")
def test_keywords_exist_in_the_vllm_source():
    with zipfile.ZipFile(os.environ["STRUCTBENCH_VLLM_WHEEL"]) as wheel:
        sampling = wheel.read("vllm/sampling_params.py").decode()
        entry = wheel.read("vllm/entrypoints/llm.py").decode()
        engine_args = wheel.read("vllm/engine/arg_utils.py").decode()
        wheel_outputs = wheel.read("vllm/outputs.py").decode()
    spec = LLMSpec("vllm", "m", revision="r", context_tokens=8)
    request = ChatRequest.of([{"role": "user", "content": "x"}], schema=SCHEMA)
    kwargs = sampling_kwargs(spec, request, 4)
    assert set(kwargs) <= _signature(sampling, "SamplingParams")
    assert set(kwargs["structured_outputs"]) <= _signature(sampling, "StructuredOutputsParams")
    llm_init = _signature(entry, "LLM", "__init__")
    assert set(engine_kwargs(spec)) - {"max_model_len", "enable_prefix_caching"} <= llm_init
    assert {"max_model_len", "enable_prefix_caching"} <= _signature(engine_args, "EngineArgs")
    assert "num_cached_tokens" in wheel_outputs
    assert {"messages", "sampling_params", "use_tqdm"} <= _signature(entry, "LLM", "chat")
    assert "def get_tokenizer" in entry
