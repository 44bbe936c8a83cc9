"""What NASI's objective picks when its gradient is exact, from a `correlate` run's NASI scores.

At alpha_0 = 0 every op is equally likely, and the exact gradient of E[R(A)] with respect to
alpha_{e,k} is p_k (E[R | A_e = k] - E[R]) (score-function identity), so one step from alpha_0
selects, on each edge, the op with the largest conditional mean of R = S - mu max(0, S - nu).
Estimating those means from the stand-alone NASI scores of uniformly sampled cells (the
supernet's one-hot sub-networks are these networks) gives the architecture that Algorithm 1
would return with an unbiased gradient and many samples; the search's straight-through Gumbel
estimate is compared against it in docs/searches.md.

    python scripts/nasi_objective_oracle.py results/nasbench201/correlate_cifar10 --dataset cifar10
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from naslib_plugins.evaluation.ground_truth import default_benchmark, load_ground_truth
from naslib_plugins.optimizers.nasi import penalty
from naslib_plugins.reporting.runs import read_scores
from naslib_plugins.spaces import get_space
from naslib_plugins.spaces.nasbench201 import NUM_OPS

QUANTILES = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", help="a correlate output folder whose scores.csv has a nasi column")
    ap.add_argument("--dataset", default="cifar10")
    ap.add_argument("--benchmark", help="ground truth (default: the space's, under $NASLIB_PLUGINS_DATA)")
    args = ap.parse_args()
    space = get_space("nasbench201")
    benchmark = args.benchmark or default_benchmark(space)
    if benchmark is None:
        ap.error("no benchmark: pass --benchmark PATH or set NASLIB_PLUGINS_DATA to the data folder")
    truth = load_ground_truth(benchmark, space, args.dataset)
    scores = read_scores(Path(args.run_dir), ["nasi"])
    keys = [k for k, v in scores.items() if "nasi" in v]
    archs = np.array([space.parse(k) for k in keys])
    s = np.array([scores[k]["nasi"] for k in keys])
    print(f"{len(keys)} cells with a NASI score from {args.run_dir}; S median {np.median(s):.3g}, "
          f"mean {s.mean():.3g}, max {s.max():.3g}")
    print("| nu | mu | architecture | test accuracy |")
    print("|---|---|---|---|")
    # where nu sits within the (heavy-tailed) distribution of S decides the pick: the fixed and
    # adaptive rules put it near the mean, far above the median
    settings = [(f"{q:.0%} quantile of S ({np.quantile(s, q):.3g})", float(np.quantile(s, q))) for q in QUANTILES]
    settings += [("mean S (eq. 39), at the %.0f%% quantile" % (100 * np.mean(s <= s.mean())), float(s.mean())),
                 ("1000 (nu0)", 1000.0), ("none (max E[S])", float("inf"))]
    for label, nu in settings:
        for mu in (1.0, 2.0):
            r = np.array([penalty(v, mu, nu) for v in s])
            arch = tuple(int(np.argmax([r[archs[:, e] == k].mean() for k in range(NUM_OPS)]))
                         for e in range(archs.shape[1]))
            print(f"| {label} | {mu:g} | `{space.to_string(arch)}` | {truth.get(space.hash(arch))} |")


if __name__ == "__main__":
    main()
