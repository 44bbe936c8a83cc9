"""ZiCo's per-weight statistics with two batches: the closed form zico uses against the general
N-batch form, on the same gradients of the same networks in the same run (both read the
gradient passes from one shared block, so only the statistics are timed; the fastest of
--repeats calls). Prints, per network, its conv/linear weights, the two times and their ratio,
the largest relative difference of a layer's ratio sum and the tie-guard counts of both.

    python perf/bench_zico.py [--n-archs 2] [--threads 1] [--repeats 3]

NB201 (CIFAR-10, batch 64), TNB micro segmentsemantic and TNB macro autoencoder (64x64, batch
32: the decoders of the dense tasks hold 19-36 M weights). Gaussian inputs: no data file needed.
"""
from __future__ import annotations

import argparse

import numpy as np
import torch
from _timing import timed

from naslib_plugins.data.sources import make_batches
from naslib_plugins.predictors import gradient
from naslib_plugins.predictors.base import batch_gradients, shared_gradients, weight_layers
from naslib_plugins.spaces import get_space

NETWORKS = (("nasbench201", "cifar10", {}),
            ("transbench101_micro", "segmentsemantic", {"resolution": 64, "batch_size": 32}),
            ("transbench101_macro", "autoencoder", {"resolution": 64, "batch_size": 32}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n-archs", type=int, default=2, help="random architectures per space")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=3, help="calls per measurement, the fastest kept")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} thread(s), fastest of {args.repeats}")
    print("space dataset arch | weights | general s | closed s | general/closed | max rel diff | guarded")
    for name, dataset, options in NETWORKS:
        space = get_space(name)
        rng = np.random.default_rng(args.seed)
        batches = make_batches(dataset, seed=args.seed, data="gaussian", **options)
        loss_fn = space.loss_fn(dataset)
        for i in range(args.n_archs):
            arch = space.sample(rng)
            torch.manual_seed(args.seed + i)
            model = space.build_model(arch, dataset)
            layers = [m.weight for m in weight_layers(model)]
            with shared_gradients(model, seed=args.seed):
                for b in range(2):
                    batch_gradients(model, batches, b, loss_fn)
                results = {}
                seconds = {}
                for form, fn in (("general", lambda: gradient._ratio_sums(model, batches, loss_fn, layers, 2)),
                                 ("closed", lambda: gradient._two_batch_ratio_sums(model, batches, loss_fn, layers))):
                    seconds[form] = min(timed(lambda f=fn, k=form: results.__setitem__(k, f()))
                                        for _ in range(args.repeats))
            general, closed = results["general"], results["closed"]
            rel = max((abs(g - c) / abs(g) for (g, _), (c, _) in zip(general, closed) if g), default=0.0)
            speedup = seconds["general"] / seconds["closed"]
            print(f"{name} {dataset} {space.to_string(arch)} | {sum(w.numel() for w in layers)} | "
                  f"{seconds['general']:.3f} | {seconds['closed']:.3f} | {speedup:.1f}x | "
                  f"{rel:.1e} | {sum(g for _, g in general)} / {sum(g for _, g in closed)}")


if __name__ == "__main__":
    main()
