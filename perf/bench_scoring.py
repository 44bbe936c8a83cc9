"""Scoring time per predictor over the floor: one bare forward+backward of the same NB201 model
on the same batch, measured in the same run and the same way (each call on a freshly built
network, built outside the timer, the fastest of --repeats calls; the build is its own line).
Also every predictor in one pass, where those that read the same batch gradients share them,
over the sum of the predictors run one by one; and NAS-Bench-Suite-Zero's first-order proxies together over the floor.

    python perf/bench_scoring.py [--n-archs 10] [--batch-size 64] [--threads 2] [--repeats 2]

Uses Gaussian inputs (the timing does not depend on pixel values), so it needs no data file.
"""
from __future__ import annotations

import argparse
import statistics

import numpy as np
import torch
import torch.nn.functional as F
from _timing import timed

from naslib_plugins.data.batches import ImageBatches
from naslib_plugins.evaluation.scoring import make_predictors, score_architecture
from naslib_plugins.predictors import PREDICTORS, SetPredictor
from naslib_plugins.spaces import get_space

# NAS-Bench-Suite-Zero's first-order proxies (issue 28): one gradient or input-Jacobian pass each
FIRST_ORDER = ("grad_norm", "plain", "l2_norm", "jacov", "fisher", "zen")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n-archs", type=int, default=10)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=2, help="calls per measurement, the fastest kept")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    space = get_space("nasbench201")
    batches = ImageBatches("cifar10", batch_size=args.batch_size, seed=args.seed, data="gaussian")
    names = [n for n in PREDICTORS.names() if not issubclass(PREDICTORS.get(n), SetPredictor)]
    rng = np.random.default_rng(args.seed)
    archs = [space.sample(rng) for _ in range(args.n_archs)]
    x, y = batches.batch(0)

    def model_for(arch):
        torch.manual_seed(args.seed)
        return space.build_model(arch, "cifar10").to(memory_format=torch.channels_last)

    # warm up oneDNN kernels so the first architecture is not charged for them
    warm = model_for(archs[0])
    F.cross_entropy(warm(x), y).backward()

    def fastest(fn_of_model, arch) -> float:
        times = []
        for _ in range(args.repeats):
            m = model_for(arch)
            times.append(timed(lambda: fn_of_model(m)))
        return min(times)

    build, floor, alone, together, first_order = [], [], {n: [] for n in names}, [], []
    for arch in archs:
        build.append(min(timed(lambda: model_for(arch)) for _ in range(args.repeats)))
        floor.append(fastest(lambda m: F.cross_entropy(m(x), y).backward(), arch))
        for n in names:
            pred = make_predictors([n])[n]
            alone[n].append(fastest(lambda m: pred.score(m, batches, F.cross_entropy), arch))
        preds = make_predictors(names)
        together.append(timed(lambda: score_architecture(space, arch, "cifar10", preds, batches, args.seed)))
        group = make_predictors(FIRST_ORDER)
        first_order.append(timed(lambda: score_architecture(space, arch, "cifar10", group, batches, args.seed)))

    f = statistics.mean(floor)
    print(f"NB201, {args.n_archs} random archs, batch {args.batch_size}, {args.threads} threads")
    print(f"floor (bare forward+backward): {f:.3f} s/arch; building the network: {statistics.mean(build):.3f} s "
          f"(in neither the floor nor the per-predictor times; in both 'one pass' lines)")
    print(f"{'predictor':>10} {'s/arch':>8} {'x floor':>8}")
    for n in names:
        s = statistics.mean(alone[n])
        print(f"{n:>10} {s:8.3f} {s / f:8.2f}")
    t, serial = statistics.mean(together), sum(statistics.mean(v) for v in alone.values())
    print(f"all {len(names)} predictors in one pass: {t:.3f} s/arch = {t / f:.2f} x floor "
          f"({serial / t:.2f}x faster than one by one: {serial:.3f} s)")
    g = statistics.mean(first_order)
    print(f"the first-order proxies ({', '.join(FIRST_ORDER)}) in one pass, model built: {g:.3f} s/arch = "
          f"{g / f:.2f} x floor (goal <= 4)")


if __name__ == "__main__":
    main()
