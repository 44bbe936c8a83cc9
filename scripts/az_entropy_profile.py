"""Where AZ-NAS's progressivity comes from: the eigenvalue entropy of every feature map (stem,
then each cell or block) averaged over sampled architectures, at one or more input resolutions,
with the share of architectures whose smallest entropy increase (their progressivity) falls
between each pair of features. A feature with fewer rows (batch x height x width) than channels
has a rank-limited covariance, so its entropy is capped by the resolution, not the architecture.

    python scripts/az_entropy_profile.py --space transbench101_micro --dataset class_scene \
        [--n 10] [--seed 0] [--resolutions 64,256] [--batch-size 64] [--out FILE.md]

Each architecture's scores come from one generator seeded by (--seed, its index), the same at
every resolution. Writes markdown to --out (default: stdout).
"""
from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

import numpy as np
import torch

from naslib_plugins.errors import UserError
from naslib_plugins.fileio import write_text_atomic
from naslib_plugins.predictors.az_nas import az_scores, feature_modules
from naslib_plugins.predictors.base import hooked
from naslib_plugins.spaces import get_space


def feature_shapes(model: torch.nn.Module, resolution: int) -> list[tuple[int, ...]]:
    """(C, H, W) of each feature map at `resolution`."""
    shapes = []
    with hooked(feature_modules(model), lambda module, inputs, output: shapes.append(tuple(output.shape[1:]))), \
            torch.no_grad():
        getattr(model, "feature_forward", model)(torch.randn(2, 3, resolution, resolution))
    return shapes


def profile(space_name: str, dataset: str, n: int, seed: int, resolutions: list[int], batch_size: int) -> str:
    space = get_space(space_name)
    dataset = space.check_dataset(dataset)
    rng = np.random.default_rng(seed)
    archs = [space.sample(rng) for _ in range(n)]
    lines = [f"AZ-NAS eigenvalue entropy per feature on {space.name} / {dataset}: {n} architectures sampled with "
             f"seed {seed}, N(0, 1) input batch {batch_size}, Kaiming re-initialisation (az_nas.az_scores).", ""]
    for resolution in resolutions:
        entropies, shapes = [], None
        for i, arch in enumerate(archs):
            model = space.build_model(arch, dataset)
            shapes = shapes or feature_shapes(model, resolution)
            generator = torch.Generator().manual_seed(seed * 100003 + i)
            entropies.append(az_scores(copy.deepcopy(model), (3, resolution, resolution), batch_size,
                                       generator)["entropies"])
        e = np.array(entropies)
        steps = np.diff(e, axis=1)
        where = np.argmin(steps, axis=1)
        lines += [f"### {resolution}x{resolution} input", "",
                  "| feature | C x H x W | rows (batch x H x W) | mean entropy | mean increase to the next "
                  "| share whose smallest increase is to the next |",
                  "|---|---|---|---|---|---|"]
        for k, (c, h, w) in enumerate(shapes):
            rows = batch_size * h * w
            limited = " (fewer rows than channels)" if rows < c else ""
            step = f"{steps[:, k].mean():+.3f}" if k < steps.shape[1] else ""
            share = f"{np.mean(where == k):.2f}" if k < steps.shape[1] else ""
            lines.append(f"| {k} | {c} x {h} x {w} | {rows}{limited} | {e[:, k].mean():.3f} | {step} | {share} |")
        lines += ["", f"Mean progressivity (smallest increase): {steps.min(axis=1).mean():+.3f}.", ""]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--space", required=True)
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--n", type=int, default=10, help="architectures sampled (default: 10)")
    ap.add_argument("--seed", type=int, default=0, help="the sample and every draw (default: 0)")
    ap.add_argument("--resolutions", default="64,256", help="input sizes, comma-separated (default: 64,256)")
    ap.add_argument("--batch-size", type=int, default=64, help="AZ-NAS's batch (default: 64)")
    ap.add_argument("--out", help="markdown file (default: stdout)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    try:
        resolutions = [int(r) for r in args.resolutions.split(",")]
        if args.n < 1 or min(resolutions) < 1:
            raise ValueError
    except ValueError:
        print(f"az_entropy_profile: --n and --resolutions need positive integers, got {args.n} and "
              f"{args.resolutions!r}", file=sys.stderr)
        return 2
    try:
        text = profile(args.space, args.dataset, args.n, args.seed, resolutions, args.batch_size)
    except UserError as e:
        print(f"az_entropy_profile: {e}", file=sys.stderr)
        return 2
    command = "python scripts/az_entropy_profile.py " + " ".join(sys.argv[1:])
    text += f"\nCommand: `{command}`\n"
    if args.out:
        write_text_atomic(Path(args.out), text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
