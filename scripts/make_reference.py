"""Reference scores: 20 architectures per space x every single-architecture predictor, and one
short search per optimizer, written as JSON, checked by tests/test_reference.py (exact hashes,
strings and counts; floats within a tolerance). First made before the redesign, which reproduced it;
made again when the predictors or networks changed on purpose (the seven Suite-Zero proxies, ZiCo's
tie guard, NASWOT's -inf rule, nwot_eval's initial statistics; TNB's shortcut batch norm; Zen's
N(0, 1) weights drawn in the weights' logical order, as SWAP's, not the channels-last memory order).

    NASLIB_PLUGINS_DATA=... python scripts/make_reference.py tests/reference/reference.json [SPACE/DATASET ...]
"""
from __future__ import annotations

import json
import sys
import time

import torch

from naslib_plugins.data.sources import make_batches
from naslib_plugins.evaluation.scoring import distinct_sample, make_predictors, score_architecture
from naslib_plugins.optimizers import OPTIMIZERS
from naslib_plugins.params import constructor_params
from naslib_plugins.predictors import PREDICTORS
from naslib_plugins.predictors.base import SetPredictor
from naslib_plugins.spaces import get_space

# (space, dataset, architectures, batch options): small batches and TNB at 64 px keep this to minutes
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
# the reference predates the finite-difference second derivatives: GraSP and NASI's step as a double backward
HVP = "exact"

# one short search per optimizer, every option spelled out
SEARCHES = [
    ("nasi", "nasbench201", "cifar10", {"steps": 4, "channels": 8, "cells": 1, "nu_samples": 4}),
    ("zc-evolution", "nasbench201", "cifar10", {"predictor": "synflow", "budget": 12, "population": 4,
                                                "sample_size": 2}),
    ("zc-random", "nasbench201", "cifar10", {"predictor": "zico", "budget": 8}),
    ("zc-pt", "nasbench201", "cifar10", {"predictor": "nwot", "channels": 8, "cells": 1, "pool": 1,
                                         "validate_rounds": 2}),
]


# the single-architecture predictors the reference pins; the issue-29 rankers (AZ-NAS, VKDNW,
# MeCo, SWAP) are checked against hand computations in tests/test_rankers.py and
# tests/test_meco_swap.py instead: VKDNW's Fisher alone would take this script from minutes to an hour
REFERENCE_PREDICTORS = ("nasi", "zico", "snip", "grasp", "synflow", "params", "flops", "grad_norm", "plain", "l2_norm",
                        "fisher", "jacov", "epe_nas", "zen", "ntk_lambda_min", "nwot", "nwot_eval")


def single_predictors() -> list[str]:
    return [n for n in REFERENCE_PREDICTORS if not issubclass(PREDICTORS.get(n), SetPredictor)]


def score_rows(space_name: str, dataset: str, archs: list, batch_options: dict,
               images: str | None = None) -> list[dict]:
    """One row per architecture: hash, string, parameter count and every predictor's score.
    `images`: the CIFAR-10 sample (default: the one in $NASLIB_PLUGINS_DATA)."""
    space = get_space(space_name)
    batches = make_batches(dataset, batch_size=BATCH_SIZE, seed=SEED, images=images, **batch_options)
    predictors = make_predictors(single_predictors(), HVP)
    rows = []
    for arch in archs:
        arch = space.parse(arch)
        n_params = sum(p.numel() for p in space.build_model(arch, dataset).parameters())
        record = score_architecture(space, arch, dataset, predictors, batches, SEED)
        rows.append({"hash": record["hash"], "arch_str": record["arch_str"], "n_params": n_params,
                     "scores": record["scores"], "reason": record["reason"]})
    return rows


def search(optimizer_name: str, space_name: str, dataset: str, options: dict, images: str | None = None) -> dict:
    space = get_space(space_name)
    cls = OPTIMIZERS.get(optimizer_name)
    optimizer = cls.from_args({**options, **({"hvp": HVP} if "hvp" in constructor_params(cls) else {})})
    batches = make_batches(dataset, batch_size=BATCH_SIZE, seed=SEED, images=images)
    arch = optimizer.search(space, dataset, batches, SEED, progress=False).arch
    return {"space": space_name, "dataset": dataset, "options": options, "hash": space.hash(arch),
            "arch_str": space.to_string(arch)}


def main(path: str, only: list[str]) -> None:
    """Writes the reference to `path`; with `only` (space/dataset cases), makes just those again in
    the reference already there (after a change meant to move one space's scores)."""
    torch.set_num_threads(1)
    out = {"batch_size": BATCH_SIZE, "seed": SEED, "torch": torch.__version__, "scores": {}, "searches": {}}
    if only:
        with open(path) as f:
            out = json.load(f)
    for space_name, dataset, n, options in CASES:
        if only and f"{space_name}/{dataset}" not in only:
            continue
        start = time.time()
        archs = distinct_sample(get_space(space_name), n, SEED)
        out["scores"][f"{space_name}/{dataset}"] = {"batch": options,
                                                   "archs": score_rows(space_name, dataset, archs, options)}
        print(f"{space_name}: {n} archs in {time.time() - start:.0f} s", file=sys.stderr, flush=True)
    for optimizer_name, space_name, dataset, options in SEARCHES if not only else ():
        out["searches"][optimizer_name] = search(optimizer_name, space_name, dataset, options)
    with open(path, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
