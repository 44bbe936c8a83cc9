"""Parameter count of every architecture in NASLib's zc_<space>.json files against NASLib's
recorded `params` score (millions), per dataset/task. Writes results/fidelity.md.

    NASLIB_PLUGINS_DATA=../shared/benchdata python scripts/check_param_fidelity.py

Models are built on the meta device: shapes only, no memory, no initialisation.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import torch

from naslib_plugins.evaluation.ground_truth import load_zc_scores
from naslib_plugins.spaces import SPACES, get_space


def datasets_in(path: Path, space_name: str) -> list[str]:
    data = json.loads(path.read_text())
    data = data.get(space_name, data)
    return list(data)


def main() -> int:
    root = Path(os.environ.get("NASLIB_PLUGINS_DATA", "../shared/benchdata"))
    lines = ["# Parameter-count fidelity against NASLib's recorded `params`", "",
             "Made by `python scripts/check_param_fidelity.py` (all architectures of each file).", "",
             "| space | dataset / task | archs | equal | max abs diff (params) |", "|---|---|---|---|---|"]
    bad = 0
    for space_name in SPACES:
        space = get_space(space_name)
        if space.zc_file is None:
            continue
        path = root / space.zc_file
        for dataset in datasets_in(path, space_name):
            start = time.time()
            recorded = load_zc_scores(path, space, dataset)
            diffs = []
            for key, scores in recorded.items():
                with torch.device("meta"):
                    model = space.build_model(key, dataset)
                n = sum(p.numel() for p in model.parameters())
                diffs.append(abs(n - round(scores["params"] * 1e6)))
            equal = sum(d == 0 for d in diffs)
            bad += len(diffs) - equal
            lines.append(f"| {space_name} | {dataset} | {len(diffs)} | {equal} | {max(diffs)} |")
            print(lines[-1], f"({time.time() - start:.1f} s)", file=sys.stderr)
    Path("results").mkdir(exist_ok=True)
    Path("results/fidelity.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
