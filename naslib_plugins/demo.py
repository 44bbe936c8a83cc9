"""The main job on an embedded default, no download: on the `mlp_act_skip` space and the digits
ground truth this package ships, correlate every predictor (and their rank ensemble) with the
measured test accuracy, search with NASI and with zero-shot evolution and random search, and
write a leaderboard with plots.

Everything lands in one output folder laid out like results/ (a `correlate/` run and one
folder per search), so `naslib-plugins leaderboard DIR` reads it the same way; each step
resumes from what the folder already holds.
"""
from __future__ import annotations

from pathlib import Path

import torch

from naslib_plugins.data.digits import DigitsBatches
from naslib_plugins.device import CPU
from naslib_plugins.errors import BenchmarkFileError, info
from naslib_plugins.evaluation.correlate import correlation_table, run_correlation
from naslib_plugins.evaluation.ground_truth import load_ground_truth
from naslib_plugins.evaluation.search_run import run_search
from naslib_plugins.optimizers import OPTIMIZERS
from naslib_plugins.predictors import get_predictor
from naslib_plugins.reporting.leaderboard import build_leaderboard
from naslib_plugins.spaces import get_space
from naslib_plugins.spaces.mlp_act_skip import TABLE

SPACE, DATASET = "mlp_act_skip", "digits"


def searches(budget: int, steps: int) -> dict[str, object]:
    """The demo's search strategies by output folder name."""
    population = max(2, min(20, budget // 5))
    evolution = {"budget": budget, "population": population, "sample_size": max(1, population // 4)}
    return {
        "nasi": OPTIMIZERS.get("nasi")(steps=steps),
        "zc-evolution_zico": OPTIMIZERS.get("zc-evolution")(predictor=get_predictor("zico"), **evolution),
        "zc-evolution_ntk_lambda_min": OPTIMIZERS.get("zc-evolution")(predictor=get_predictor("ntk_lambda_min"),
                                                                     **evolution),
        "zc-random_zico": OPTIMIZERS.get("zc-random")(predictor=get_predictor("zico"), budget=budget),
    }


# the proxies that score a flat MLP in seconds; the rankers that read feature maps (AZ-NAS, MeCo,
# SWAP) have none here, and VKDNW's Fisher takes seconds per network
DEMO_PREDICTORS = ("nasi", "zico", "snip", "grasp", "synflow", "params", "flops", "grad_norm", "plain", "l2_norm",
                   "fisher", "jacov", "epe_nas", "zen", "ntk_lambda_min", "nwot", "nwot_eval", "ensemble")


def run_demo(out: Path, n_archs: int = 300, seeds: tuple[int, ...] = (0, 1, 2), budget: int = 100,
             steps: int = 100, batch_size: int = 64, command: str = "naslib-plugins demo",
             device: torch.device = CPU) -> dict:
    if not TABLE.is_file():
        raise BenchmarkFileError(f"the packaged digits table is missing: {TABLE} (reinstall the package, or "
                                 "make it with `python scripts/make_digits_benchmark.py`)")
    torch.set_num_threads(1)  # 64-wide MLPs: more threads only add synchronisation (minutes on a busy machine)
    space = get_space(SPACE)
    truth = load_ground_truth(TABLE, space, DATASET, "test_accuracy")
    names = list(DEMO_PREDICTORS)
    batches = DigitsBatches(batch_size=batch_size, seed=seeds[0])
    info(f"demo: {space.name} ({len(truth)} architectures, test accuracy after the recipe in {TABLE.name}); "
         f"data: {batches.describe()}")
    correlation = run_correlation(space, DATASET, truth, names, batches, n_archs, seeds[0], out / "correlate",
                                  command=command, device=device)
    print(correlation_table(correlation))
    found = {}
    for folder, optimizer in searches(budget, steps).items():
        result = run_search(optimizer, space, DATASET, list(seeds),
                            lambda seed: DigitsBatches(batch_size=batch_size, seed=seed),
                            out / f"search_{folder}", TABLE, command=command, device=device)
        found[folder] = result
    best = max(truth.values.values())
    mean = sum(truth.values.values()) / len(truth)
    print(f"\nsearch ({len(seeds)} seeds; the space's best test accuracy is {best:.2f}, its mean {mean:.2f}):")
    for folder, result in found.items():
        print(f"  {folder:<30} {result['mean_test_accuracy']:6.2f} +- {result['std_test_accuracy']:.2f}  "
              f"{result['mean_search_seconds']:.1f} s per search")
    board = build_leaderboard(out, anchors=None, plots=True)
    print(f"\nleaderboard: {out / 'LEADERBOARD.md'}; plots: " + ", ".join(str(out / p) for p in board["plots"]))
    return {"correlation": correlation, "searches": found, "leaderboard": board}
