"""Peak memory of a running process and its children, sampled with psutil (shared by the benchmarks)."""

from __future__ import annotations

import subprocess
import tempfile
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


def run_watched(cmd: list[str], every: float = SAMPLE_EVERY_S) -> tuple[int, str, str, int, int]:
    """Run ``cmd`` to the end while :func:`watch_peak_rss` polls it: (exit code, stdout, stderr, peak sum, peak
    largest). The output goes to files, not pipes: a pipe nobody reads until the end fills up (64 KiB) and
    blocks the child."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        with psutil.Popen(cmd, stdout=out, stderr=err, text=True) as proc:
            peak_sum, peak_one = watch_peak_rss(proc, every)
        out.seek(0)
        err.seek(0)
        return proc.returncode, out.read(), err.read(), peak_sum, peak_one
