"""ntk_lambda_min's two routes to the kernel, by row (one forward, one backward per output row)
and vmapped (torch.func's jacrev over the same parameter chunks, a batched backward), on the same
random networks of each space, in one run: seconds per network, the ratio, which route the
predictor takes there, and the largest difference of lambda_min between the two relative to
lambda_min (float32 backward kernels round apart).

    python perf/bench_ntk.py [--n-archs 5] [--threads 1] [--seed 0]
"""
from __future__ import annotations

import statistics

import numpy as np
import torch
from _timing import per_space_args, timed

from naslib_plugins.data.sources import make_batches
from naslib_plugins.predictors.ntk import NTKLambdaMin, kernel_route
from naslib_plugins.spaces import get_space

# TNB at the 64x64 resolution of its searches here (its own 256x256 costs ~16x more)
CASES = (("nasbench201", "cifar10", {}), ("nasbench101", "cifar10", {}), ("nasbench301", "cifar10", {}),
         ("transbench101_micro", "class_scene", {"resolution": 64}),
         ("transbench101_macro", "class_scene", {"resolution": 64}), ("mlp_act_skip", "digits", {}))


def main() -> None:
    args = per_space_args(__doc__)
    predictor = NTKLambdaMin()
    print(f"{args.n_archs} random networks per space, seed {args.seed}, {args.threads} thread(s), "
          f"{predictor.samples} samples, reduction {predictor.reduction}, networks in channels-last as scored")
    print(f"{'space/task':34s} {'vmapped s':>9s} {'by row s':>8s} {'by row faster':>13s} {'taken':>8s} "
          f"{'max rel diff':>12s}")
    for space_name, task, options in CASES:
        space = get_space(space_name)
        x = make_batches(task, seed=args.seed, **options).batch(0)[0][: predictor.samples]
        rng = np.random.default_rng(args.seed)
        slow, fast, diffs = [], [], []
        for i in range(args.n_archs + 1):  # the first network warms both routes up, untimed
            torch.manual_seed(args.seed + i)
            model = space.build_model(space.sample(rng), task)
            if x.dim() == 4:
                model = model.to(memory_format=torch.channels_last)
            got = {}
            a = timed(lambda: got.__setitem__("vmapped", predictor.kernel(model, x, route="vmapped")))
            b = timed(lambda: got.__setitem__("by_row", predictor.kernel(model, x, route="by_row")))
            old, new = (float(torch.linalg.eigvalsh(got[k])[0]) for k in ("vmapped", "by_row"))
            taken = kernel_route(model)
            if i:
                slow.append(a)
                fast.append(b)
                diffs.append(abs(old - new) / max(abs(old), 1e-12))
        a, b = statistics.mean(slow), statistics.mean(fast)
        print(f"{space_name + '/' + task:34s} {a:9.3f} {b:8.3f} {a / b:12.2f}x {taken:>8s} {max(diffs):12.1e}")


if __name__ == "__main__":
    main()
