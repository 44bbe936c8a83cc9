"""How close the finite-difference second derivatives (--hvp fd) come to the exact ones, at the
sizes the searches and correlations use. Writes JSON and prints a markdown summary.

NASI: d S / d alpha at `--steps` Gumbel samples of a NB201 NASI search (seeded as one), then at
two chain cells (1 -> 2 -> 3 -> 4, every other edge `none`), where S is largest. Each of
  fd32 (the default: float32, frozen ReLU pieces), exact32 (the float32 double backward) and
  fd64 (the finite difference in float64)
is compared with the float64 double backward: cosine and relative error ||a - b|| / ||b||.
GraSP: --grasp-archs random NB201 architectures scored with fd and exact (float32, as scored),
Spearman between them, the largest difference and the mean seconds per architecture.

    NASLIB_PLUGINS_DATA=... python perf/hvp_accuracy.py --out results/perf/hvp_accuracy.json [--device cuda]

On CUDA TF32 is turned off, so float32 means float32 (see README, "Devices").
"""
from __future__ import annotations

import argparse
import copy
import json
import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import torch
from scipy.stats import spearmanr

from naslib_plugins.data.batches import on_device
from naslib_plugins.data.sources import make_batches
from naslib_plugins.device import environment, resolve_device
from naslib_plugins.evaluation.scoring import distinct_sample, make_predictors, score_architecture
from naslib_plugins.hvp import FrozenKinks
from naslib_plugins.optimizers.nasi import NASI, gumbel, straight_through
from naslib_plugins.spaces import get_space
from naslib_plugins.spaces.nasbench201.encoding import CONV1, CONV3, EDGE_POS, NONE, SKIP

CHAINS = ((CONV3, CONV3, CONV3), (CONV3, CONV1, SKIP))


def chain(ops) -> list[int]:
    cell = [NONE] * 6
    for edge, op in zip(((1, 2), (2, 3), (3, 4)), ops):
        cell[EDGE_POS[edge]] = op
    return cell


def compare(a: torch.Tensor, reference: torch.Tensor) -> dict:
    return {"cosine": float(a @ reference / (a.norm() * reference.norm())),
            "rel_error": float((a - reference).norm() / reference.norm())}


def nasi_steps(args) -> list[dict]:
    space = get_space("nasbench201")
    torch.manual_seed(args.seed)
    net = space.supernet("cifar10", "nasi", {"channels": args.channels, "cells": args.cells}).train()
    net64 = copy.deepcopy(net).double().to(args.device)
    net.to(args.device)
    batches = on_device(make_batches("cifar10", batch_size=args.batch_size, seed=args.seed), args.device)
    generator = torch.Generator().manual_seed(args.seed)
    alpha = [torch.zeros(n, requires_grad=True) for n in net.groups]
    noises = [[gumbel(a.numel(), generator) for a in alpha] for _ in range(args.steps)]
    noises += [[10.0 * torch.nn.functional.one_hot(torch.tensor(c), 5) for c in chain(ops)] for ops in CHAINS]
    rows = []
    for t, noise in enumerate(noises):
        x, y = batches.batch(t)

        def sample(dtype=torch.float32, noise=noise):
            return [straight_through(a, n, 1.0).to(args.device, dtype) for a, n in zip(alpha, noise)]

        def gradient(model, hvp, dtype):
            start = time.perf_counter()
            with FrozenKinks(model) if hvp == "fd" else nullcontext() as kinks:
                s, derivative = NASI._step(model, kinks, alpha, lambda: sample(dtype), x.to(dtype), y,
                                           torch.nn.functional.cross_entropy)
                d = torch.cat(derivative()).double()
            if args.device.type == "cuda":
                torch.cuda.synchronize(args.device)
            return s, d, time.perf_counter() - start

        s, fd32, t_fd = gradient(net, "fd", torch.float32)
        _, exact32, t_exact = gradient(net, "exact", torch.float32)
        _, fd64, _ = gradient(net64, "fd", torch.float64)
        _, exact64, _ = gradient(net64, "exact", torch.float64)
        row = {"step": t, "cell": net.choice_of(sample()), "S": s, "chain": t >= args.steps,
               "fd32": compare(fd32, exact64), "exact32": compare(exact32, exact64), "fd64": compare(fd64, exact64),
               "seconds": {"fd32": round(t_fd, 3), "exact32": round(t_exact, 3)}}
        rows.append(row)
        print(f"step {t}: S {s:.4g}, fd32 {row['fd32']}, exact32 {row['exact32']}, fd64 {row['fd64']}", flush=True)
    return rows


def grasp(args) -> dict:
    space = get_space("nasbench201")
    batches = on_device(make_batches("cifar10", batch_size=args.batch_size, seed=args.seed), args.device)
    archs = distinct_sample(space, args.grasp_archs, args.seed)
    scores, seconds = {}, {}
    for hvp in ("fd", "exact"):
        predictors = make_predictors(["grasp"], hvp)
        records = [score_architecture(space, a, "cifar10", predictors, batches, args.seed, device=args.device)
                   for a in archs]
        scores[hvp] = np.array([r["scores"]["grasp"] for r in records])
        seconds[hvp] = float(np.mean([r["seconds"]["grasp"] for r in records]))
    rel = np.abs(scores["fd"] - scores["exact"]) / np.abs(scores["exact"]).max()
    return {"archs": len(archs), "spearman": float(spearmanr(scores["fd"], scores["exact"])[0]),
            "max_abs_difference_over_max_abs_score": float(rel.max()), "seconds_per_arch": seconds}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=18, help="Gumbel samples (two chain cells follow)")
    ap.add_argument("--channels", type=int, default=16)
    ap.add_argument("--cells", type=int, default=5)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--grasp-archs", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    args.device = resolve_device(args.device)
    if args.device.type == "cuda":
        torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    result = {"settings": {**vars(args), "device": str(args.device)}, "environment": environment(args.device),
              "nasi": nasi_steps(args), "grasp": grasp(args)}
    rows = result["nasi"]
    summary = {k: {"min_cosine": min(r[k]["cosine"] for r in rows),
                   "max_rel_error": max(r[k]["rel_error"] for r in rows)} for k in ("fd32", "exact32", "fd64")}
    ratios = [r["seconds"]["fd32"] / r["seconds"]["exact32"] for r in rows]
    summary["fd32_seconds_over_exact32"] = float(np.mean(ratios))
    result["summary"] = summary
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"\nNASI d S / d alpha over {len(rows)} NB201 steps against float64 exact:\n")
    print("| gradient | min cosine | max relative error |\n|---|---|---|")
    for k in ("fd32", "exact32", "fd64"):
        print(f"| {k} | {summary[k]['min_cosine']:.7f} | {summary[k]['max_rel_error']:.2e} |")
    g = result["grasp"]
    print(f"\nGraSP fd vs exact over {g['archs']} NB201 architectures: Spearman {g['spearman']:.4f}, "
          f"largest difference {g['max_abs_difference_over_max_abs_score']:.2e} of the largest |score|")


if __name__ == "__main__":
    main()
