"""Job logs: progress lines on long loops (done of total, rate, time left) and the closing usage line of a step
(wall and CPU seconds, peak memory)."""

import logging
import re

from structbench.logs import Progress, peak_rss_mib, step_log, with_progress


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def progress_lines(caplog):
    return [record.getMessage() for record in caplog.records if record.name == "structbench.test"]


def test_progress_logs_at_most_every_interval_with_rate_and_eta(caplog):
    caplog.set_level(logging.INFO, "structbench")
    clock = Clock()
    progress = Progress(logging.getLogger("structbench.test"), "chunked", 40, "documents", interval=30.0, clock=clock)
    for _ in range(10):  # 10 documents in 20 s: under the interval, nothing yet
        clock.now += 2.0
        progress.update()
    assert progress_lines(caplog) == []
    for _ in range(10):  # the 15th document crosses 30 s
        clock.now += 2.0
        progress.update()
    assert progress_lines(caplog) == ["chunked 15/40 documents, 0.5 documents/s, eta 50 s, 30.0 s elapsed"]
    progress.finish()
    assert progress_lines(caplog)[-1] == "chunked 20/40 documents, 0.5 documents/s, eta 40 s, 40.0 s elapsed"


def test_with_progress_yields_every_item_and_closes_once(caplog):
    caplog.set_level(logging.INFO, "structbench")
    logger = logging.getLogger("structbench.test")
    assert list(with_progress(iter("abc"), logger, "segmented", 3, "documents", interval=0.0)) == ["a", "b", "c"]
    # a line per item at interval 0, and no second closing line repeating the last
    assert progress_lines(caplog)[-1].startswith("segmented 3/3 documents, ")
    assert [line.split(",")[0] for line in progress_lines(caplog)] == [f"segmented {n}/3 documents" for n in (1, 2, 3)]
    caplog.clear()
    assert list(with_progress([], logger, "segmented", 0, "documents")) == []
    assert [line.split(",")[0] for line in progress_lines(caplog)] == ["segmented 0/0 documents"]


def test_a_step_closes_its_log_with_its_seconds_and_peak_memory(tmp_path):
    with step_log(tmp_path / "step.log", "score") as log:
        log.info("scored")
    closing = (tmp_path / "step.log").read_text().splitlines()[-1]
    found = re.search(r"structbench\.score INFO done in ([\d.]+) s, cpu ([\d.]+) s, peak RSS (\d+) MiB$", closing)
    assert found, closing
    seconds, cpu, rss = float(found[1]), float(found[2]), int(found[3])
    assert 0 <= seconds < 5 and 0 <= cpu < 5 and rss >= peak_rss_mib() - 1 > 0
