"""What the benchmarks in perf/ share (each runs as `python perf/NAME.py`, so this folder is on the path)."""
from __future__ import annotations

import time


def timed(fn) -> float:
    """Wall seconds of one call of `fn`."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start
