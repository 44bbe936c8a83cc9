"""MeCo as scored (one solve per tensor, none where the map has no more positions than channels,
whose lambda_min is 0 by rank) against the plain route (a float64 eigen-solve for every firing
of every hooked module), on the same random networks of each space, in one run: seconds per
network, the ratio, and the largest difference between the two scores relative to the score.

    python perf/bench_meco.py [--n-archs 5] [--threads 1] [--seed 0]
"""
from __future__ import annotations

import statistics

import numpy as np
import torch
from _timing import per_space_args, timed

from naslib_plugins.data.inputs import as_batches
from naslib_plugins.predictors.base import hooked
from naslib_plugins.predictors.meco import (
    MeCo,
    channel_rows,
    hook_plan,
    min_correlation_eigenvalue,
    output_tensor,
    single_value_batch_norm,
)
from naslib_plugins.spaces import get_space

CASES = (("nasbench201", "cifar10", 64), ("nasbench101", "cifar10", 64), ("nasbench301", "cifar10", 64),
         ("transbench101_micro", "class_scene", 32), ("transbench101_micro", "jigsaw", 32),
         ("transbench101_macro", "segmentsemantic", 32))


def plain(model: torch.nn.Module, x: torch.Tensor) -> float:
    """Every firing solved: the sum over hooked firings of count x lambda_min."""
    plan = hook_plan(model, x)
    total = 0.0

    def hook(module, inputs, output):
        nonlocal total
        if output_tensor(output) is not None:
            for sample in range(plan.samples):
                rows = channel_rows(output, sample)
                total += plan.counts[module] * min_correlation_eigenvalue(rows, low_rank_zero=False)

    model.train()
    with hooked([m for m, c in plan.counts.items() if c > 0], hook), single_value_batch_norm(model), torch.no_grad():
        plan.run(plan.x)
    return total


def main() -> None:
    args = per_space_args(__doc__)
    print(f"{args.n_archs} random networks per space, seed {args.seed}, {args.threads} thread(s)")
    print(f"{'space/task':36s} {'plain s':>8s} {'meco s':>8s} {'faster':>7s} {'max rel diff':>12s}")
    for space_name, task, batch in CASES:
        space = get_space(space_name)
        batches = as_batches(None, task, batch, args.seed)
        rng = np.random.default_rng(args.seed)
        slow, fast, diffs = [], [], []
        for i in range(args.n_archs):
            torch.manual_seed(args.seed + i)
            model = space.build_model(space.sample(rng), task)
            got = {}
            torch.manual_seed(args.seed)  # NB101's input is drawn: the same for both
            slow.append(timed(lambda: got.__setitem__("plain", plain(model, batches.batch(0)[0]))))
            torch.manual_seed(args.seed)
            fast.append(timed(lambda: got.__setitem__("meco", MeCo().score(model, batches, None))))
            diffs.append(abs(got["plain"] - got["meco"]) / max(abs(got["plain"]), 1e-12))
        a, b = statistics.mean(slow), statistics.mean(fast)
        print(f"{space_name + '/' + task:36s} {a:8.3f} {b:8.3f} {a / b:6.2f}x {max(diffs):12.1e}")


if __name__ == "__main__":
    main()
