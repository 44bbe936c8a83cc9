"""The cost of a second derivative, exact (double backward) and by finite differences (--hvp fd),
as ratios to a floor measured in the same run: one bare forward+backward of the sampled
architecture's stand-alone network on the same batch, in NCHW.

Per NB201 sample: the floor (NCHW and channels_last), NASI's search step (exact, fd, fd in
channels_last) and GraSP on the stand-alone network (exact, fd, fd in channels_last, the CPU
scoring path's layout). Printed: medians over the samples of the seconds, the ratio to the NCHW
floor and the ratio to the floor in the same layout.

    OMP_NUM_THREADS=1 python perf/bench_hvp.py [--samples 6] [--channels 16] [--cells 5] [--batch-size 64]

Gaussian inputs (timing does not depend on pixel values), so it needs no data file.
"""
from __future__ import annotations

import argparse
import statistics
from contextlib import nullcontext

import torch
import torch.nn.functional as F
from _timing import timed

from naslib_plugins.data.batches import FixedBatches, ImageBatches
from naslib_plugins.hvp import FrozenKinks
from naslib_plugins.optimizers.nasi import NASI, gumbel, straight_through
from naslib_plugins.predictors.gradient import GraSP
from naslib_plugins.spaces import get_space


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=6)
    ap.add_argument("--cells", type=int, default=5)
    ap.add_argument("--channels", type=int, default=16)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    space = get_space("nasbench201")
    size = {"channels": args.channels, "cells": args.cells}
    torch.manual_seed(args.seed)
    net = space.supernet("cifar10", "nasi", size).train()
    batches = ImageBatches("cifar10", batch_size=args.batch_size, seed=args.seed, data="gaussian")
    generator = torch.Generator().manual_seed(args.seed)
    alpha = [torch.zeros(n, requires_grad=True) for n in net.groups]
    rows: dict[str, list[float]] = {}
    for t in range(args.samples + 1):  # sample 0 warms the kernels up and is not counted
        x, y = batches.batch(t)
        noise = [gumbel(a.numel(), generator) for a in alpha]

        def sample(noise=noise):
            return [straight_through(a, n, 1.0) for a, n in zip(alpha, noise)]

        standalone = space.standalone(net.decode([w.detach() for w in sample()]), "cifar10", size).train()
        times = {}
        for layout, fmt in (("", torch.contiguous_format), (" channels_last", torch.channels_last)):
            xl = x.contiguous(memory_format=fmt)
            net.to(memory_format=fmt)
            standalone.to(memory_format=fmt)
            times["floor" + layout] = timed(lambda: F.cross_entropy(standalone(xl), y).backward())
            for hvp in ("exact", "fd") if not layout else ("fd",):
                def nasi_step(hvp=hvp, xl=xl):
                    with FrozenKinks(net) if hvp == "fd" else nullcontext() as kinks:
                        _, derivative = NASI._step(net, kinks, alpha, sample, xl, y, F.cross_entropy)
                        derivative()
                times[f"nasi step {hvp}{layout}"] = timed(nasi_step)
                times[f"grasp {hvp}{layout}"] = timed(
                    lambda hvp=hvp, xl=xl: GraSP(hvp=hvp).score(standalone, FixedBatches([(xl, y)]), F.cross_entropy))
        net.to(memory_format=torch.contiguous_format)
        if t:
            for key, value in times.items():
                layout = " channels_last" if key.endswith("channels_last") else ""
                rows.setdefault(key, []).append((value, value / times["floor"], value / times["floor" + layout]))
    print(f"NB201 C={args.channels} N={args.cells}, batch {args.batch_size}, {args.threads} thread(s), "
          f"{args.samples} samples, torch {torch.__version__}\n")
    print("| what | s | x NCHW floor | x floor in its layout |\n|---|---|---|---|")
    for key, values in rows.items():
        seconds, ratio, own = (statistics.median(column) for column in zip(*values))
        print(f"| {key} | {seconds:.3f} | {ratio:.2f} | {own:.2f} |")


if __name__ == "__main__":
    main()
