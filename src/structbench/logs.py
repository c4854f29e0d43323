"""Logging for workflow steps: one ``structbench`` package logger per job, and progress on long work.

Library modules log through ``logging.getLogger(__name__)`` and never take a logger argument; a
workflow script wraps its work in :func:`step_log`, which points the whole ``structbench`` logger
tree at the job's log file (and stderr) for the duration of the step. Long loops report through
:class:`Progress`, so a job log reads "encoded 640/1335 texts, 11.2 texts/s, eta 62 s" rather than
staying silent for minutes.
"""

from __future__ import annotations

import contextlib
import logging
import resource
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

PACKAGE = "structbench"
FORMAT = "%(asctime)s %(name)s %(levelname)s %(message)s"


@contextlib.contextmanager
def step_log(path: str | Path | None, name: str):
    """Send every ``structbench.*`` record to ``path`` (and stderr) while one step runs.

    Yields the step's own logger (``structbench.<name>``); an exception is logged with its traceback
    before it propagates, so the job log says why the job failed. The closing line gives the step's wall
    time, its CPU time (every thread of the process: on a shared machine, the measure that other work
    slows least) and its process's peak resident memory (:func:`peak_rss_mib`), the usage record a scaling
    benchmark reads (benchmarks/bench_scale.py)."""
    package = logging.getLogger(PACKAGE)
    package.setLevel(logging.INFO)
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(path, mode="w"))
    formatter = logging.Formatter(FORMAT)
    for handler in handlers:
        handler.setFormatter(formatter)
        package.addHandler(handler)
    logger = logging.getLogger(f"{PACKAGE}.{name}")
    started, cpu_started = time.perf_counter(), time.process_time()
    try:
        yield logger
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        logger.info("done in %.1f s, cpu %.1f s, peak RSS %d MiB", wall, cpu, peak_rss_mib())
    except Exception:
        logger.exception("failed after %.1f s", time.perf_counter() - started)
        raise
    finally:
        for handler in handlers:
            package.removeHandler(handler)
            handler.close()


def peak_rss_mib() -> int:
    """This process's peak resident memory in MiB. Every job runs its script in a process of its own, so this
    is the job's peak (``ru_maxrss`` is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


class Progress:
    """Periodic progress lines for a loop over ``total`` items.

        progress = Progress(log, "encoded", total=len(texts), unit="texts")
        for batch in batches:
            ...
            progress.update(len(batch))
        progress.finish()

    A line is logged at most every ``interval`` seconds (and always by :meth:`finish`), with the rate
    and the remaining time at that rate. Cheap enough to call once per item."""

    def __init__(
        self,
        logger: logging.Logger,
        verb: str,
        total: int,
        unit: str = "items",
        interval: float = 10.0,
        clock=time.monotonic,
    ):
        self.logger, self.verb, self.total, self.unit = logger, verb, total, unit
        self.interval, self.clock = interval, clock
        self.done = self.logged = 0
        self.started = self.last = clock()

    def update(self, n: int = 1) -> None:
        self.done += n
        now = self.clock()
        if now - self.last >= self.interval:
            self.last, self.logged = now, self.done
            self.logger.info("%s", self.line(now))

    def finish(self) -> None:
        """The closing line, unless the last periodic line already counted every item done."""
        if self.logged != self.done or self.done == 0:
            self.logger.info("%s", self.line(self.clock()))

    def line(self, now: float) -> str:
        elapsed = max(now - self.started, 1e-9)
        rate = self.done / elapsed
        text = f"{self.verb} {self.done}/{self.total} {self.unit}, {rate:.1f} {self.unit}/s"
        if self.done < self.total and rate > 0:
            text += f", eta {(self.total - self.done) / rate:.0f} s"
        return text + f", {elapsed:.1f} s elapsed"


def with_progress(
    items: Iterable[T], logger: logging.Logger, verb: str, total: int, unit: str = "items", interval: float = 10.0
) -> Iterator[T]:
    """``items``, one by one, with a :class:`Progress` line at most every ``interval`` seconds: an item counts as
    done when the loop asks for the next, and the closing line follows the last."""
    progress = Progress(logger, verb, total=total, unit=unit, interval=interval)
    for item in items:
        yield item
        progress.update()
    progress.finish()
