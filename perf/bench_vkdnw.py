"""VKDNW's per-sample Fisher Jacobian: the by-layer route (one forward, K backward passes to the
selected layers' outputs) against torch.func's jacrev under vmap (the official route), on the
same NB201 cells and Gaussian batch, in one run: seconds per cell, the ratio, and the largest
difference between the two Jacobians relative to the largest entry.

    python perf/bench_vkdnw.py [--n-archs 10] [--batch-size 64] [--threads 1] [--dataset cifar10]
"""
from __future__ import annotations

import argparse
import statistics

import numpy as np
import torch
from _timing import timed

from naslib_plugins.data.datasets import dataset_info
from naslib_plugins.predictors import vkdnw as vk
from naslib_plugins.predictors.az_nas import kaiming_fan_in_
from naslib_plugins.spaces import get_space


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n-archs", type=int, default=10)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--dataset", default="cifar10")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    space = get_space("nasbench201")
    info = dataset_info(args.dataset)
    rng = np.random.default_rng(args.seed)
    vmapped, by_layer, errors = [], [], []
    for i in range(args.n_archs):
        torch.manual_seed(args.seed + i)
        net = space.build_model(space.sample(rng), args.dataset).to(memory_format=torch.contiguous_format)
        kaiming_fan_in_(net)
        vk.reset_batch_norm_statistics(net)
        net.eval()
        x = torch.randn(args.batch_size, info.channels, info.resolution, info.resolution)
        names = vk.selected_parameters(net)
        out = {}
        vmapped.append(timed(lambda: out.__setitem__("vmap", vk._jacobian_reverse(net, x, names))))
        by_layer.append(timed(lambda: out.__setitem__("layer", vk._jacobian_by_layer(net, x, names))))
        scale = float(out["vmap"].abs().max()) or 1.0
        errors.append(float((out["vmap"] - out["layer"]).abs().max()) / scale)
    a, b = statistics.mean(vmapped), statistics.mean(by_layer)
    print(f"NB201 {args.dataset}, {args.n_archs} random cells, batch {args.batch_size}, {args.threads} thread(s)")
    print(f"jacrev under vmap: {a:.3f} s/cell; by layer: {b:.3f} s/cell; {a / b:.2f}x faster")
    print(f"largest |difference| / largest |entry|: {max(errors):.1e}")


if __name__ == "__main__":
    main()
