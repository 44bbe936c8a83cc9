"""How far float32 scores and the demo's results move across torch's CPU kernel paths
(ATEN_CPU_CAPABILITY), each run in its own process:

1. every per-architecture predictor on N NB201 cells (real CIFAR-10 sample, batch 64): per
   predictor the largest difference between two paths relative to its largest |score|, the
   Spearman between paths, and whether the best cell is the same;
2. the demo (`naslib-plugins demo`) under each path: per predictor the largest difference of its
   Kendall and Spearman between paths, and per search whether every seed found the same cell.

    python perf/kernel_paths.py --out results/perf/kernel_paths.json [--n-archs 20] [--paths default,avx2,avx512]

Needs $NASLIB_PLUGINS_DATA (the CIFAR-10 sample and the NB201 table); an x86 CPU for avx2/avx512.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from itertools import combinations
from pathlib import Path

import numpy as np
import torch
from scipy import stats

from naslib_plugins.device import environment
from naslib_plugins.fileio import write_text_atomic
from naslib_plugins.predictors import PREDICTORS, SetPredictor
from naslib_plugins.spaces import get_space


def _run(capability: str, argv: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "ATEN_CPU_CAPABILITY": capability, "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-m", "naslib_plugins", *argv], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"{capability}: naslib-plugins {' '.join(argv)} failed:\n{done.stderr[-2000:]}")
    return done


def _scores(capability: str, archs: list[str], names: list[str]) -> dict[str, dict]:
    argv = ["score", "--space", "nasbench201", "--dataset", "cifar10", "--batch-size", "64",
            "--predictors", ",".join(names), *(f for a in archs for f in ("--arch", a))]
    return {r["hash"]: r["scores"] for r in map(json.loads, _run(capability, argv).stdout.splitlines())}


def _compare_scores(runs: dict[str, dict], names: list[str]) -> dict:
    out = {}
    for name in names:
        row = {"max_rel_diff": 0.0, "min_spearman": 1.0, "same_best": True, "failed": 0}
        for a, b in combinations(runs, 2):
            keys = [k for k in runs[a] if runs[a][k][name] is not None and runs[b][k][name] is not None]
            row["failed"] = max(row["failed"], len(runs[a]) - len(keys))
            if len(keys) < 3:
                continue
            x = np.array([runs[a][k][name] for k in keys])
            y = np.array([runs[b][k][name] for k in keys])
            scale = max(np.abs(x).max(), np.abs(y).max()) or 1.0
            row["max_rel_diff"] = max(row["max_rel_diff"], float(np.abs(x - y).max() / scale))
            if np.ptp(x) > 0 and np.ptp(y) > 0:
                row["min_spearman"] = min(row["min_spearman"], float(stats.spearmanr(x, y).statistic))
            row["same_best"] &= bool(keys[int(x.argmax())] == keys[int(y.argmax())])
        out[name] = {k: (f"{v:.3g}" if isinstance(v, float) else v) for k, v in row.items()}
    return out


def _demo(capability: str, folder: Path) -> dict:
    _run(capability, ["demo", "--out", str(folder)])
    correlation = json.loads((folder / "correlate" / "correlation.json").read_text())["predictors"]
    searches = {p.parent.name: [r["arch_str"] for r in json.loads(p.read_text())["runs"]]
                for p in sorted(folder.glob("search_*/search.json"))}
    return {"correlation": correlation, "searches": searches}


def _compare_demos(demos: dict[str, dict]) -> dict:
    first = next(iter(demos.values()))
    out = {"correlation": {}, "searches": {}}
    for name in first["correlation"]:
        diffs = {m: max(abs((d["correlation"][name][m] or 0.0) - (first["correlation"][name][m] or 0.0))
                        for d in demos.values()) for m in ("kendall", "spearman")}
        out["correlation"][name] = {m: f"{v:.2g}" for m, v in diffs.items()}
    for search, cells in first["searches"].items():
        out["searches"][search] = all(d["searches"][search] == cells for d in demos.values())
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--n-archs", type=int, default=20)
    ap.add_argument("--paths", default="default,avx2,avx512")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    paths = args.paths.split(",")
    space = get_space("nasbench201")
    rng = np.random.default_rng(args.seed)
    archs = list(dict.fromkeys(space.hash(space.sample(rng)) for _ in range(args.n_archs)))
    names = [n for n in PREDICTORS.names() if not issubclass(PREDICTORS.get(n), SetPredictor)]
    runs = {}
    for p in paths:
        print(f"scoring under {p}", file=sys.stderr)
        runs[p] = _scores(p, archs, names)
    demos = {}
    with tempfile.TemporaryDirectory() as tmp:
        for p in paths:
            print(f"demo under {p}", file=sys.stderr)
            demos[p] = _demo(p, Path(tmp) / p)
    result = {"command": "python perf/kernel_paths.py " + " ".join(sys.argv[1:]), "paths": paths,
              "environment": environment(torch.device("cpu")),
              "nb201_scores": {"n_archs": len(archs), "batch_size": 64, "seed": args.seed,
                               "predictors": _compare_scores(runs, names)},
              "demo": _compare_demos(demos)}
    write_text_atomic(Path(args.out), json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
