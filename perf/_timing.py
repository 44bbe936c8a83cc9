"""What the benchmarks in perf/ share (each runs as `python perf/NAME.py`, so this folder is on the path)."""
from __future__ import annotations

import argparse
import time

import torch


def timed(fn) -> float:
    """Wall seconds of one call of `fn`."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def per_space_args(doc: str) -> argparse.Namespace:
    """The options of the benchmarks that time two routes on a few random networks of each space
    (--n-archs, --threads, --seed), torch's thread count set from them."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n-archs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    return args
