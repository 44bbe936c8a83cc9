"""AZ-NAS's shared pass (az_scores: the three scores of one network) with the Rademacher probes
drawn as scored (az_nas.rademacher) against the official draw, bernoulli(0.5) of a full tensor,
on the same random networks of each space, in one run: seconds per network, the ratio, and
whether the three scores agree bit for bit (they must: the draws are the same numbers).

    python perf/bench_az.py [--n-archs 5] [--threads 1] [--seed 0]
"""
from __future__ import annotations

import math
import statistics
from unittest import mock

import numpy as np
import torch
from _timing import per_space_args, timed

from naslib_plugins.predictors import az_nas
from naslib_plugins.predictors.base import private_copy
from naslib_plugins.spaces import get_space

CASES = (("nasbench201", "cifar10", (3, 32, 32)), ("nasbench101", "cifar10", (3, 32, 32)),
         ("nasbench301", "cifar10", (3, 32, 32)), ("transbench101_micro", "class_scene", (3, 64, 64)),
         ("transbench101_macro", "class_scene", (3, 64, 64)))


def official_probe(shape, generator=None) -> torch.Tensor:
    return (torch.bernoulli(torch.full(shape, 0.5), generator=generator) - 0.5) * 2


def scores(model: torch.nn.Module, shape: tuple, seed: int) -> tuple[float, ...]:
    out = az_nas.az_scores(private_copy(model), shape, az_nas.DEFAULT_BATCH_SIZE, torch.Generator().manual_seed(seed))
    return out["expressivity"], out["progressivity"], out["trainability"]


def same(a: tuple, b: tuple) -> bool:
    return all(x == y or (math.isnan(x) and math.isnan(y)) for x, y in zip(a, b))


def main() -> None:
    args = per_space_args(__doc__)
    print(f"{args.n_archs} random networks per space, seed {args.seed}, {args.threads} thread(s), "
          f"batch {az_nas.DEFAULT_BATCH_SIZE} of Gaussian inputs")
    print(f"{'space/task':34s} {'bernoulli s':>11s} {'az s':>8s} {'faster':>7s} {'identical':>9s}")
    for space_name, task, shape in CASES:
        space = get_space(space_name)
        rng = np.random.default_rng(args.seed)
        slow, fast, identical = [], [], True
        warm_up = space.build_model(space.sample(np.random.default_rng([args.seed, 1])), task)
        scores(warm_up.to(memory_format=torch.channels_last), shape, args.seed)  # untimed: first-call costs
        for i in range(args.n_archs):
            torch.manual_seed(args.seed + i)
            model = space.build_model(space.sample(rng), task).to(memory_format=torch.channels_last)
            got = {}
            with mock.patch.object(az_nas, "rademacher", official_probe):
                slow.append(timed(lambda: got.__setitem__("official", scores(model, shape, args.seed + i))))
            fast.append(timed(lambda: got.__setitem__("az", scores(model, shape, args.seed + i))))
            identical &= same(got["official"], got["az"])
        a, b = statistics.mean(slow), statistics.mean(fast)
        print(f"{space_name + '/' + task:34s} {a:11.3f} {b:8.3f} {a / b:6.2f}x {str(identical):>9s}")


if __name__ == "__main__":
    main()
