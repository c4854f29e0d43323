"""structbench: does document structure help dense retrieval? A reproducible experiment system."""

__version__ = "0.1.0"
__all__ = ["__version__", "chunk_markdown", "chunk_markdown_file", "show_question"]


def __getattr__(name):
    # The study's winning recipe as one call (structbench.api.chunk_markdown), loaded on first use: importing
    # the package (every workflow job does) loads no chunking code, and a job's code version
    # (structbench.provenance) follows only what its script imports.
    if name in ("chunk_markdown", "chunk_markdown_file"):
        from structbench import api

        return getattr(api, name)
    if name == "show_question":  # one question of a finished run (structbench.show), loaded likewise on first use
        from structbench import show

        return show.show_question
    raise AttributeError(f"module 'structbench' has no attribute {name!r}")
