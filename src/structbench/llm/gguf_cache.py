"""A GGUF model converted once, then loaded from the conversion.

transformers reads a GGUF file by converting its tokenizer and de-quantizing every tensor, most of a job's
load time for the packaged SmolLM2 on a CPU, in every job that loads it: two induction shards, two context
shards and each of their reruns, even when every request is answered from the response cache. The conversion
is a pure function of (GGUF file content, dtype, transformers version), so its result is saved with
``save_pretrained`` (safetensors) under a folder named by those three and later loads read that folder, a
fraction of the conversion's time (measured: docs/benchmarks.md, "Loading a GGUF model once converted"). The
tensors are the same values, so answers are the same token for token
(tests/llm/test_transformers_backend.py compares the logits of both loads exactly).

The folder lives in the user's cache, like Hugging Face's own: ``$STRUCTBENCH_MODEL_CACHE``, else
``$XDG_CACHE_HOME/structbench/models``, else ``~/.cache/structbench/models``. Setting
``STRUCTBENCH_MODEL_CACHE`` to an empty string turns the conversion cache off (every load converts).
A conversion is written to a temporary folder and renamed into place, so jobs that convert side by side
never read a half-written one; the loser's copy is removed.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)

ENV = "STRUCTBENCH_MODEL_CACHE"
READY = "converted.ok"  # written last: a folder without it is not a finished conversion


def cache_root() -> Path | None:
    """Where conversions live, or None when the cache is turned off (``STRUCTBENCH_MODEL_CACHE=""``)."""
    if ENV in os.environ:
        return Path(os.environ[ENV]).expanduser() if os.environ[ENV] else None
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "structbench" / "models"


def conversion_dir(root: Path, weights: str, dtype: str, transformers_version: str) -> Path:
    """The folder of one conversion: the GGUF content hash, the dtype and the converting transformers."""
    return root / f"{weights[:32]}-{dtype}-transformers-{transformers_version}"


def is_converted(folder: Path) -> bool:
    return (folder / READY).is_file()


def save_dequantized(model, folder: Path) -> None:
    """The model's config, generation config and tensors, in the layout ``from_pretrained`` reads.

    transformers refuses ``save_pretrained`` on a model loaded from GGUF (it counts as quantized, though
    every tensor is already de-quantized), so the parts are written here: the config without its
    ``quantization_config``, and the tensors with safetensors' ``save_model`` (which writes a tied weight
    once; ``from_pretrained`` ties it again from the config)."""
    import copy

    from safetensors.torch import save_model

    config = copy.deepcopy(model.config)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.save_pretrained(folder)
    model.generation_config.save_pretrained(folder)
    save_model(model, str(folder / "model.safetensors"))


def save_conversion(folder: Path, tokenizer, model) -> Path:
    """Write ``tokenizer`` and ``model`` to ``folder`` atomically; return the folder that holds a finished
    conversion (another job's, when it finished first)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        tokenizer.save_pretrained(staging)
        save_dequantized(model, staging)
        (staging / READY).write_text("")
        try:
            staging.rename(folder)
        except OSError:  # another job renamed its conversion first: keep that one
            if not is_converted(folder):
                raise
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    log.info("saved the converted GGUF model to %s", folder)
    return folder
