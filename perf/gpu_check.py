"""GPU figures for NB201: the bare floor, seconds per architecture of every predictor, scores
against the CPU's on the same architectures, and NASI T=100 searches, written as one JSON.

    python perf/gpu_check.py --images PATH/cifar10_convnetjs_5k.npz --out DIR [--seeds 0-2]

Needs a CUDA device. Weights are drawn on the CPU and moved, so CPU and GPU score the same
networks; what differs is the kernels' floating-point order, and TF32 where it is allowed. The
score comparison runs twice, TF32 convolutions allowed (PyTorch's default) and not."""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from scipy import stats

from naslib_plugins.data.batches import ImageBatches, on_device
from naslib_plugins.device import environment, resolve_device
from naslib_plugins.evaluation.scoring import distinct_sample, make_predictors, score_architecture
from naslib_plugins.evaluation.search_run import parse_seeds
from naslib_plugins.optimizers import OPTIMIZERS
from naslib_plugins.spaces import get_space

PREDICTORS = ["nasi", "zico", "snip", "grasp", "synflow", "params", "flops", "nwot", "ntk_lambda_min"]
BEST = "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_3x3~2|"
NASI_CONFIG = {"steps": 100, "mu": 1.0, "nu": "adaptive", "nu0": 1000.0, "tau": 1.0, "xi": 1.0, "channels": 16,
               "cells": 5, "drop_none": True}  # configs/nasi_nasbench201_drop_none.yaml


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def floor_seconds(space, batches, device: torch.device, reps: int = 20) -> float:
    """Median seconds of one bare forward+backward of the NB201 best cell (C=16, N=5)."""
    torch.manual_seed(0)
    layout = torch.channels_last if device.type == "cpu" else torch.contiguous_format  # as the scoring path
    model = space.build_model(BEST, "cifar10").to(device=device, memory_format=layout)
    x, y = on_device(batches, device).batch(0)
    times = []
    for i in range(reps + 3):
        sync(device)
        start = time.perf_counter()
        F.cross_entropy(model(x), y).backward()
        sync(device)
        if i >= 3:  # the first passes pick kernels
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def score_all(space, archs, batches, device: torch.device) -> list[dict]:
    predictors = make_predictors(PREDICTORS)
    score_architecture(space, archs[0], "cifar10", predictors, batches, 99, device=device)  # warm-up, not kept
    return [score_architecture(space, a, "cifar10", predictors, batches, 0, device=device) for a in archs]


def compare(cpu: list[dict], gpu: list[dict]) -> dict:
    out = {}
    for name in PREDICTORS:
        a = np.array([r["scores"][name] for r in cpu], dtype=float)
        b = np.array([r["scores"][name] for r in gpu], dtype=float)
        ok = np.isfinite(a) & np.isfinite(b)
        rel = np.abs(a[ok] - b[ok]) / np.maximum(np.abs(a[ok]), 1e-12)
        rho = stats.spearmanr(a[ok], b[ok]).statistic if ok.sum() > 2 and np.ptp(a[ok]) > 0 else None
        out[name] = {"n": int(ok.sum()), "max_rel_diff": float(rel.max()) if ok.any() else None,
                     "median_rel_diff": float(np.median(rel)) if ok.any() else None,
                     "spearman_cpu_gpu": None if rho is None else float(rho)}
    return out


def seconds(records: list[dict]) -> dict:
    return {n: round(statistics.mean(r["seconds"][n] for r in records), 5) for n in PREDICTORS}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--images", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--archs", type=int, default=20)
    parser.add_argument("--cpu-archs", type=int, default=10)
    parser.add_argument("--seeds", default="0-2", help="NASI searches; none: no search")
    parser.add_argument("--steps", type=int, default=100, help="NASI's T (fewer only to try the script out)")
    parser.add_argument("--device", default="cuda", help="cpu only to try the script out")
    args = parser.parse_args()
    device = resolve_device(args.device)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    space = get_space("nasbench201")
    batches = ImageBatches("cifar10", batch_size=64, seed=0, images=args.images)
    archs = distinct_sample(space, args.archs, 0)
    result = {"environment": environment(device), "cpu_threads": torch.get_num_threads(),
              "command": "python perf/gpu_check.py " + " ".join(sys.argv[1:]), "batch_size": 64,
              "cudnn_allow_tf32_default": torch.backends.cudnn.allow_tf32}

    def save() -> None:
        (out / "gpu_check.json").write_text(json.dumps(result, indent=2) + "\n")

    result["floor_seconds"] = {"cuda": floor_seconds(space, batches, device),
                               "cpu": floor_seconds(space, batches, torch.device("cpu"), reps=5)}
    gpu = score_all(space, archs, batches, device)
    result["seconds_per_arch_cuda"] = seconds(gpu)
    save()
    cpu = score_all(space, archs[: args.cpu_archs], batches, torch.device("cpu"))
    result["seconds_per_arch_cpu"] = seconds(cpu)
    result["cpu_vs_cuda_tf32"] = compare(cpu, gpu[: args.cpu_archs])
    result["scores"] = {r["hash"]: {"cpu": c["scores"], "cuda": r["scores"]} for c, r in zip(cpu, gpu)}
    moved = on_device(batches, device)
    result["batches_moved_exactly"] = all(torch.equal(a.cpu(), b) for i in range(3)
                                          for a, b in zip(moved.batch(i), batches.batch(i)))
    torch.backends.cudnn.allow_tf32 = False
    result["cpu_vs_cuda_no_tf32"] = compare(cpu, score_all(space, archs[: args.cpu_archs], batches, device))
    torch.backends.cudnn.allow_tf32 = True
    save()
    config = {**NASI_CONFIG, "steps": args.steps}
    result["nasi"] = {"config": config, "runs": []}
    optimizer = OPTIMIZERS.get("nasi").from_args(config)
    for seed in [] if args.seeds == "none" else parse_seeds(args.seeds):
        seeded = ImageBatches("cifar10", batch_size=64, seed=seed, images=args.images)
        sync(device)
        start = time.perf_counter()
        arch = optimizer.search(space, "cifar10", seeded, seed, progress=False, device=device).arch
        sync(device)
        result["nasi"]["runs"].append({"seed": seed, "arch_str": space.to_string(arch),
                                       "search_seconds": round(time.perf_counter() - start, 2)})
        save()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
