"""Make the digits ground-truth table of the `mlp_act_skip` space (package data used by `demo`):
train all 4,096 architectures with the fixed recipe in naslib_plugins/evaluation/minibench.py.
Resumable: rerun the same command after an interruption.

    python scripts/make_digits_benchmark.py [--workers 2] [--out naslib_plugins/data/digits_mlp_act_skip.csv]
"""
from __future__ import annotations

import argparse
from pathlib import Path

from naslib_plugins.evaluation.minibench import make_table
from naslib_plugins.spaces import get_space
from naslib_plugins.spaces.mlp_act_skip import TABLE


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=TABLE)
    args = parser.parse_args()
    n = make_table(get_space("mlp_act_skip"), args.out, seed=args.seed, workers=args.workers)
    print(f"{n} architectures -> {args.out}")


if __name__ == "__main__":
    main()
