"""Logging for workflow steps: one log file per job, progress lines with timings."""

from __future__ import annotations

import contextlib
import logging
import sys
import time
from pathlib import Path


@contextlib.contextmanager
def step_log(path: str | Path | None, name: str):
    """Log to ``path`` (and stderr) for the duration of one step; an exception is logged before it propagates."""
    logger = logging.getLogger(f"structbench.{name}")
    logger.setLevel(logging.INFO)
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(path, mode="w"))
    formatter = logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s")
    for handler in handlers:
        handler.setFormatter(formatter)
        logger.addHandler(handler)
    started = time.perf_counter()
    try:
        yield logger
        logger.info("done in %.1f s", time.perf_counter() - started)
    except Exception:
        logger.exception("failed after %.1f s", time.perf_counter() - started)
        raise
    finally:
        for handler in handlers:
            logger.removeHandler(handler)
            handler.close()
