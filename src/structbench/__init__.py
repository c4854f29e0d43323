"""structbench: does document structure help dense retrieval? A reproducible experiment system."""

__version__ = "0.1.0"


def chunk_markdown(text, **options):
    """The study's winning recipe as one call; see :func:`structbench.api.chunk_markdown`."""
    from structbench.api import chunk_markdown as _chunk_markdown

    return _chunk_markdown(text, **options)


__all__ = ["__version__", "chunk_markdown"]
