"""Where a NASI search step spends its time, over a floor measured in the same run: one bare
forward+backward of the sampled architecture's stand-alone network on the same batch.

A step is: the supernet forward with straight-through weights (every op that a weight could
switch on runs), d loss / d theta with create_graph (so S can be differentiated again), S, and
the double backward d S / d alpha. Printed per phase: mean seconds and the ratio to the floor.

    python perf/bench_nasi.py [--steps 5] [--cells 5] [--channels 16] [--batch-size 64] [--threads 1] [--profile]

--profile also prints torch.profiler's heaviest autograd nodes in one more step's double backward.

Gaussian inputs (timing does not depend on pixel values), so it needs no data file.
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

from naslib_plugins.data.batches import ImageBatches
from naslib_plugins.optimizers.nasi import gumbel, straight_through
from naslib_plugins.spaces import get_space


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--cells", type=int, default=5)
    ap.add_argument("--channels", type=int, default=16)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    space = get_space("nasbench201")
    torch.manual_seed(args.seed)
    net = space.supernet("cifar10", "nasi", {"channels": args.channels, "cells": args.cells})
    net.train()
    batches = ImageBatches("cifar10", batch_size=args.batch_size, seed=args.seed, data="gaussian")
    generator = torch.Generator().manual_seed(args.seed)
    alpha = [torch.zeros(n, requires_grad=True) for n in net.groups]
    phases: dict[str, list[float]] = {"floor": [], "forward": [], "backward (create_graph)": [],
                                      "double backward": []}
    profiled = args.steps + 1  # an extra step, not timed: the profiler slows what it watches
    for t in range(args.steps + 1 + args.profile):  # step 0 warms the kernels up and is not counted
        x, y = batches.batch(t)
        weights = [straight_through(a, gumbel(a.numel(), generator), 1.0) for a in alpha]
        choice = net.choice_of(weights)
        standalone = space.standalone(net.decode([w.detach() for w in weights]), "cifar10",
                                      {"channels": args.channels, "cells": args.cells})
        standalone.train()
        start = time.perf_counter()
        F.cross_entropy(standalone(x), y).backward()
        marks = [start, time.perf_counter()]
        params = net.parameters_of(choice)
        loss = F.cross_entropy(net(x, weights), y)
        marks.append(time.perf_counter())
        grads = torch.autograd.grad(loss, params, create_graph=True, allow_unused=True)
        score = sum((g * g).sum() for g in grads if g is not None)
        marks.append(time.perf_counter())
        if t == profiled:
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
                torch.autograd.grad(score, alpha)
        else:
            torch.autograd.grad(score, alpha)
        marks.append(time.perf_counter())
        if 0 < t < profiled:
            for name, a, b in zip(phases, marks, marks[1:]):
                phases[name].append(b - a)
    floor = statistics.mean(phases["floor"])
    step = sum(statistics.mean(v) for k, v in phases.items() if k != "floor")
    print(f"NB201 supernet C={args.channels} N={args.cells}, batch {args.batch_size}, {args.threads} thread(s), "
          f"{args.steps} steps")
    print("| phase | s/step | x floor | share of step |")
    print("|---|---|---|---|")
    for name, values in phases.items():
        mean = statistics.mean(values)
        share = "" if name == "floor" else f"{mean / step:.0%}"
        print(f"| {name} | {mean:.3f} | {mean / floor:.1f} | {share} |")
    print(f"| whole step | {step:.3f} | {step / floor:.1f} | 100% |")
    if args.profile:
        # autograd nodes (names ending in Backward...) with their inclusive time: which layer
        # types the double backward pays for
        events = [e for e in prof.key_averages() if "Backward" in e.key and not e.key.startswith("autograd::")]
        total = sum(e.self_cpu_time_total for e in prof.key_averages())
        print("\n| double-backward node | calls | inclusive share of the double backward |")
        print("|---|---|---|")
        for e in sorted(events, key=lambda e: -e.cpu_time_total)[:8]:
            print(f"| {e.key} | {e.count} | {e.cpu_time_total / total:.0%} |")


if __name__ == "__main__":
    main()
