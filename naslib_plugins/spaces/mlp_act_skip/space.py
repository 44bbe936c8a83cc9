"""MLPs with one searched activation per layer and searched skip connections, after Zhu, Liu,
Chrysos & Cevher (NeurIPS 2022, "Generalization Properties of NAS under Activation and Skip
Connection Search"), for scikit-learn's digits.

Network (depth L, width k, PyTorch's default initialisation, no BatchNorm), as the project's
issue 8 defines it (the paper's own layer equations were not at hand to check it against):
    h_0 = W_0 x                                   (linear embedding of the 64 pixels to width k)
    h_l = sigma_l(W_l h_{l-1}) + sum_{j -> l chosen} h_j,   l = 1..L,  j in 0..l-2
    output = W_out h_L                            (10 classes)
The connection l-1 -> l is always there (it is the layer itself), so a skip j -> l jumps at
least one layer; no skips gives a plain MLP, skips give residual (and denser) MLPs.

Canonical encoding: a flat tuple of ints, the L activation indices (ACTIVATIONS order) then one
0/1 bit per skip pair in `skip_pairs(L)` order: by target layer, then by source
((0,2), (0,3), (1,3) for L = 3). Readable string: `relu-tanh-gelu|0>2,1>3` (no skips: `relu-tanh-gelu|`).
The default L = 3 space has 8^3 * 2^3 = 4,096 architectures.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch.nn as nn

from naslib_plugins.data.datasets import dataset_info
from naslib_plugins.errors import ArchitectureError, UserError
from naslib_plugins.spaces.base import CategoricalSpace
from naslib_plugins.spaces.encoding import is_int
from naslib_plugins.spaces.mlp_act_skip.encoding import ACTIVATIONS, NUM_ACTIVATIONS, Arch, skip_pairs
from naslib_plugins.spaces.mlp_act_skip.network import MLPActSkipNetwork
from naslib_plugins.spaces.mlp_act_skip.supernet import MLPActSkipSupernet

# the ground truth this package measures itself (evaluation/minibench.py), shipped as package data
TABLE = Path(__file__).resolve().parents[2] / "data" / "digits_mlp_act_skip.csv"


class MLPActSkipSpace(CategoricalSpace):
    name = "mlp_act_skip"
    datasets = ("digits",)
    # depth and width are the space's own (they shape the encoding), not the network's size
    default_size = {}
    supernets = {"nasi": MLPActSkipSupernet}
    benchmark_file = TABLE

    def __init__(self, depth: int = 3, width: int = 64):
        super().__init__()
        for label, value in (("depth", depth), ("width", width)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UserError(f"mlp_act_skip {label} must be a positive integer, got {value!r}")
        self.depth = depth
        self.width = width
        self.pairs = skip_pairs(depth)
        self.length = depth + len(self.pairs)
        self.sizes = (NUM_ACTIVATIONS,) * depth + (2,) * len(self.pairs)

    # ------------------------------------------------------------------ encodings

    def _check(self, values: Sequence[Any], original: Any) -> Arch:
        if len(values) != self.length:
            raise ArchitectureError(
                f"mlp_act_skip architecture of depth {self.depth} needs {self.length} ints ({self.depth} "
                f"activations + {len(self.pairs)} skip bits), got {len(values)}: {original!r}"
            )
        out = []
        for pos, v in enumerate(values):
            if not is_int(v):
                raise ArchitectureError(f"mlp_act_skip entry {v!r} is not an int in {original!r}")
            v = int(v)  # numpy ints would spell hashes as "np.int64(1)" under numpy 2
            if pos < self.depth and not 0 <= v < NUM_ACTIVATIONS:
                raise ArchitectureError(
                    f"mlp_act_skip activation index {v} of layer {pos + 1} out of range 0..{NUM_ACTIVATIONS - 1} "
                    f"in {original!r}"
                )
            if pos >= self.depth and v not in (0, 1):
                j, t = self.pairs[pos - self.depth]
                raise ArchitectureError(f"mlp_act_skip skip bit for {j}>{t} must be 0 or 1, got {v} in {original!r}")
            out.append(v)
        return tuple(out)

    def _from_text(self, text: str, original: Any) -> Arch:
        if "|" not in text:
            raise ArchitectureError(
                f"unreadable mlp_act_skip architecture {original!r}: expected 'act-act-...|j>l,...' "
                f"or a tuple of {self.length} ints"
            )
        acts_part, _, skips_part = text.partition("|")
        names = [a.strip() for a in acts_part.split("-")]
        if len(names) != self.depth:
            raise ArchitectureError(
                f"mlp_act_skip string needs {self.depth} activations joined by '-', got {len(names)}: {text!r}"
            )
        for a in names:
            if a not in ACTIVATIONS:
                raise ArchitectureError(f"unknown mlp_act_skip activation {a!r}; known: {', '.join(ACTIVATIONS)}")
        bits = [0] * len(self.pairs)
        for item in filter(None, (s.strip() for s in skips_part.split(","))):
            source, sep, target = item.partition(">")
            if not (sep and source.strip().isdigit() and target.strip().isdigit()):
                raise ArchitectureError(f"bad mlp_act_skip skip {item!r} (want source>target, e.g. 0>2): {text!r}")
            pair = (int(source), int(target))
            if pair not in self.pairs:
                raise ArchitectureError(
                    f"mlp_act_skip skip {item!r} is not allowed: a skip j>l needs 2 <= l <= {self.depth} "
                    f"and 0 <= j <= l-2 (l-1 feeds l already): {text!r}"
                )
            if bits[self.pairs.index(pair)]:
                raise ArchitectureError(f"mlp_act_skip skip {item!r} named twice: {text!r}")
            bits[self.pairs.index(pair)] = 1
        return tuple(ACTIVATIONS.index(a) for a in names) + tuple(bits)

    def to_string(self, arch: Any) -> str:
        arch = self.parse(arch)
        acts = "-".join(ACTIVATIONS[i] for i in arch[: self.depth])
        skips = ",".join(f"{j}>{t}" for (j, t), bit in zip(self.pairs, arch[self.depth :]) if bit)
        return f"{acts}|{skips}"

    # ------------------------------------------------------------------ sampling

    def sample(self, rng: np.random.Generator) -> Arch:
        acts = rng.integers(0, NUM_ACTIVATIONS, size=self.depth)
        bits = rng.integers(0, 2, size=len(self.pairs))
        return tuple(int(v) for v in np.concatenate([acts, bits]))

    # ------------------------------------------------------------------ model

    def build_model(self, arch: Any, dataset: str, size: Mapping[str, int | None] | None = None) -> nn.Module:
        info = dataset_info(self.check_dataset(dataset))
        self.size(size)
        arch = self.parse(arch)
        skips = [pair for pair, bit in zip(self.pairs, arch[self.depth :]) if bit]
        return MLPActSkipNetwork(arch[: self.depth], skips, info.features, self.width,
                                 info.num_classes)
