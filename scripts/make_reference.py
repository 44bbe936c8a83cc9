"""Reference scores: ~20 architectures per space x every single-architecture predictor, and one
short search per optimizer, written as JSON. Made before a refactor by the old code and checked
after it by tests/test_reference.py (exact hashes and counts, floats within a tolerance).

    python scripts/make_reference.py tests/reference/reference.json   # needs $NASLIB_PLUGINS_DATA
"""
from __future__ import annotations

import json
import sys
import time

import torch

from naslib_plugins.benchmarks.scoring import distinct_sample, make_predictors, score_architecture
from naslib_plugins.data.sources import make_batches
from naslib_plugins.optimizers import OPTIMIZERS
from naslib_plugins.predictors import PREDICTORS
from naslib_plugins.spaces import get_space

# (space, dataset, archs, batch options): small batches and TNB at 64 px keep this to minutes
CASES = [
    ("nasbench201", "cifar10", 20, {}),
    ("nasbench101", "cifar10", 20, {}),
    ("nasbench301", "cifar10", 20, {}),
    ("transbench101_micro", "class_scene", 20, {"resolution": 64}),
    ("transbench101_macro", "autoencoder", 20, {"resolution": 64}),
    ("mlp_act_skip", "digits", 20, {}),
]
BATCH_SIZE = 8
SEED = 0

# one short search per optimizer, every option spelled out
SEARCHES = [
    ("nasi", "nasbench201", "cifar10", {"steps": 4, "channels": 8, "cells": 1, "nu_samples": 4}),
    ("zc-evolution", "nasbench201", "cifar10", {"predictor": "synflow", "budget": 12, "population": 4,
                                                "sample_size": 2}),
    ("zc-random", "nasbench201", "cifar10", {"predictor": "zico", "budget": 8}),
    ("zc-pt", "nasbench201", "cifar10", {"predictor": "nwot", "channels": 8, "cells": 1, "pool": 1,
                                         "validate_rounds": 2}),
]


def single_predictors() -> list[str]:
    return [n for n in PREDICTORS.names() if not getattr(PREDICTORS.get(n), "set_level", False)]


def main(path: str) -> None:
    torch.set_num_threads(1)
    out = {"batch_size": BATCH_SIZE, "seed": SEED, "torch": torch.__version__, "scores": {}, "searches": {}}
    names = single_predictors()
    for space_name, dataset, n, options in CASES:
        start = time.time()
        space = get_space(space_name)
        batches = make_batches(dataset, batch_size=BATCH_SIZE, seed=SEED, **options)
        predictors = make_predictors(names)
        rows = []
        for arch in distinct_sample(space, n, SEED):
            model = space.build_model(arch, dataset)
            record = score_architecture(space, arch, dataset, predictors, batches, SEED)
            rows.append({"hash": record["hash"], "arch_str": record["arch_str"],
                         "n_params": sum(p.numel() for p in model.parameters()),
                         "scores": record["scores"], "reason": record["reason"]})
        out["scores"][f"{space_name}/{dataset}"] = {"batch": options, "archs": rows}
        print(f"{space_name}: {n} archs in {time.time() - start:.0f} s", file=sys.stderr, flush=True)
    for optimizer_name, space_name, dataset, options in SEARCHES:
        start = time.time()
        space = get_space(space_name)
        optimizer = OPTIMIZERS.get(optimizer_name)(**options)
        batches = make_batches(dataset, batch_size=BATCH_SIZE, seed=SEED)
        outcome = optimizer.search(space, dataset, batches, SEED, progress=False)
        out["searches"][optimizer_name] = {"space": space_name, "dataset": dataset, "options": options,
                                           "hash": space.hash(outcome.arch), "arch_str": space.to_string(outcome.arch)}
        print(f"{optimizer_name}: {time.time() - start:.0f} s", file=sys.stderr, flush=True)
    with open(path, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
