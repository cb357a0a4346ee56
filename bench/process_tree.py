"""Peak memory of a running process and its children, sampled with psutil (shared by the benchmarks)."""

from __future__ import annotations

import time

import psutil

SAMPLE_EVERY_S = 0.02


def watch_peak_rss(proc: psutil.Popen, every: float = SAMPLE_EVERY_S) -> tuple[int, int]:
    """Poll ``proc`` until it exits: (peak of the summed RSS of its tree, peak RSS of its largest process), bytes.

    The sum counts pages shared between forked workers once per process, so it overstates a little. Runs of
    many minutes sample less often (``every``): walking the process tree costs CPU the run then lacks.
    """
    peak_sum = peak_one = 0
    while proc.poll() is None:
        rss = []
        try:
            tree = [proc, *proc.children(recursive=True)]
        except psutil.NoSuchProcess:
            break
        for p in tree:
            try:
                rss.append(p.memory_info().rss)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                pass
        peak_sum, peak_one = max(peak_sum, sum(rss)), max(peak_one, max(rss, default=0))
        time.sleep(every)
    return peak_sum, peak_one
