"""Package data: the shipped default learned inducer (``default_inducer.model``) and the manifest of the sources
it was trained on (``inducer_manifest.json``); read by :mod:`structbench.structure.default_inducer`. No code."""
