"""A ground truth this package measures itself: every architecture of a small space trained on
scikit-learn's digits with one fixed recipe, its test accuracy recorded.

The table ships as package data (`naslib_plugins/data/digits_mlp_act_skip.csv`, the space's
`benchmark_file`), its recipe in the comment lines at its top, so the `demo` correlates predictors
and runs searches with a real ground truth and no download. Made by `python scripts/make_digits_benchmark.py`.
"""
from __future__ import annotations

import contextlib
import csv
import json
import sys
import time
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from tqdm import tqdm

from naslib_plugins.data.digits import DIGITS_SPLIT_SEED, digits_split
from naslib_plugins.evaluation.journal import ScoreLog
from naslib_plugins.evaluation.scoring import arch_seed
from naslib_plugins.spaces.base import SearchSpace

# Fixed once; changing any of it means remaking the table. A short budget on purpose: trained to
# convergence nearly every architecture ends within a point or two of the others and the ranking
# is noise; after 2 epochs the accuracies spread widely and training seeds rank them alike. It
# measures how fast an architecture learns, which is what NTK-based scores speak to.
RECIPE = {
    "dataset": "digits", "split_seed": DIGITS_SPLIT_SEED, "train": 1437, "test": 360,
    "optimizer": "SGD", "lr": 0.02, "momentum": 0.9, "nesterov": True, "weight_decay": 5e-4,
    "schedule": "cosine to 0 over all steps", "epochs": 2, "batch_size": 64, "loss": "cross_entropy",
    "init": "PyTorch default, seeded from (seed, arch hash)", "metric": "test accuracy (%) after the last epoch",
}


def train_once(space: SearchSpace, arch: Any, seed: int, recipe: dict = RECIPE) -> dict:
    """Train one architecture from its seeded initialisation; accuracies in percent."""
    arch = space.parse(arch)
    key = space.hash(arch)
    x_train, y_train, x_test, y_test = digits_split(recipe["split_seed"])
    generator = torch.Generator().manual_seed(arch_seed(seed, f"{key}|train"))
    torch.manual_seed(arch_seed(seed, key))
    model = space.build_model(arch, recipe["dataset"])
    steps_per_epoch = -(-len(x_train) // recipe["batch_size"])
    total = recipe["epochs"] * steps_per_epoch
    opt = torch.optim.SGD(model.parameters(), lr=recipe["lr"], momentum=recipe["momentum"],
                          nesterov=recipe["nesterov"], weight_decay=recipe["weight_decay"])
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total)
    start = time.perf_counter()
    model.train()
    loss = torch.tensor(float("nan"))
    for _ in range(recipe["epochs"]):
        order = torch.randperm(len(x_train), generator=generator)
        for i in range(0, len(x_train), recipe["batch_size"]):
            idx = order[i:i + recipe["batch_size"]]
            loss = F.cross_entropy(model(x_train[idx]), y_train[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
    model.eval()
    with torch.no_grad():
        test = float((model(x_test).argmax(1) == y_test).double().mean()) * 100
        train = float((model(x_train).argmax(1) == y_train).double().mean()) * 100
    return {"hash": key, "arch_str": space.to_string(arch), "test_accuracy": round(test, 4),
            "train_accuracy": round(train, 4), "final_loss": float(loss.detach()),
            "seconds": time.perf_counter() - start}


def _job(args: tuple) -> dict:
    return train_once(*args)


def _init_worker() -> None:
    torch.set_num_threads(1)  # tiny models: one thread each is fastest and never oversubscribes


def make_table(space: SearchSpace, out_csv: Path, seed: int = 0, workers: int = 1, limit: int | None = None) -> int:
    """Train every architecture of `space` (or the first `limit`) into `out_csv`; finished
    architectures are kept in `out_csv`.jsonl, so an interrupted run resumes where it stopped."""
    archs = list(space.all())[:limit]
    settings = {"space": space.name, "seed": seed, "recipe": RECIPE, "archs": len(archs)}
    log_path = out_csv.with_suffix(".jsonl")
    with ScoreLog(log_path, settings) as log:
        todo = [a for a in archs if space.hash(a) not in log.records]
        jobs = [(space, a, seed) for a in todo]
        with contextlib.ExitStack() as stack:
            if workers <= 1:
                _init_worker()
                results = map(_job, jobs)
            else:
                import multiprocessing as mp

                pool = stack.enter_context(mp.get_context("spawn").Pool(workers, initializer=_init_worker))
                results = pool.imap_unordered(_job, jobs, chunksize=8)
            for record in tqdm(results, total=len(todo), desc="training", unit="arch", file=sys.stderr,
                               dynamic_ncols=True, mininterval=2.0):
                log.add(record)
        records = [log.records[space.hash(a)] for a in archs]
    out_csv.parent.mkdir(parents=True, exist_ok=True)
    with open(out_csv, "w", newline="") as f:
        f.write(f"# {space.name} (depth {space.depth}, width {space.width}) trained on scikit-learn's digits, "
                f"seed {seed}; made by `python scripts/make_digits_benchmark.py`\n")
        f.write("# recipe: " + json.dumps(RECIPE, sort_keys=True) + "\n")
        w = csv.writer(f)
        w.writerow(["arch", "arch_str", "test_accuracy", "train_accuracy", "train_seconds"])
        for r in records:
            w.writerow([r["hash"], r["arch_str"], r["test_accuracy"], r["train_accuracy"], round(r["seconds"], 3)])
    return len(records)
