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

import ast
import itertools
from typing import Any, Iterator, Sequence

import numpy as np
import torch
import torch.nn as nn

from naslib_plugins.data.datasets import dataset_info
from naslib_plugins.errors import ArchitectureError, UserError
from naslib_plugins.spaces.base import SearchSpace

ACTIVATIONS = ("relu", "leaky_relu", "tanh", "sigmoid", "gelu", "silu", "elu", "softplus")
NUM_ACTIVATIONS = len(ACTIVATIONS)
_MODULES = {
    "relu": nn.ReLU,
    "leaky_relu": nn.LeakyReLU,
    "tanh": nn.Tanh,
    "sigmoid": nn.Sigmoid,
    "gelu": nn.GELU,
    "silu": nn.SiLU,
    "elu": nn.ELU,
    "softplus": nn.Softplus,
}

Arch = tuple[int, ...]


def skip_pairs(depth: int) -> tuple[tuple[int, int], ...]:
    """Every (source j, target l) a skip can join: l = 2..depth, j = 0..l-2, by target then source."""
    return tuple((j, l) for l in range(2, depth + 1) for j in range(l - 1))


def activation_module(index: int) -> nn.Module:
    return _MODULES[ACTIVATIONS[index]]()


class MLPActSkipSpace(SearchSpace):
    name = "mlp_act_skip"
    datasets = ("digits",)

    def __init__(self, depth: int = 3, width: int = 64):
        for label, value in (("depth", depth), ("width", width)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UserError(f"mlp_act_skip {label} must be a positive integer, got {value!r}")
        self.depth = depth
        self.width = width
        self.pairs = skip_pairs(depth)
        self.length = depth + len(self.pairs)

    # ------------------------------------------------------------------ encodings

    def parse(self, arch: Any) -> Arch:
        if isinstance(arch, str):
            text = arch.strip()
            if text.startswith(("(", "[")):
                try:
                    values = ast.literal_eval(text)
                except (ValueError, SyntaxError):
                    raise ArchitectureError(f"unreadable mlp_act_skip tuple {arch!r}") from None
                if not isinstance(values, (tuple, list)):
                    raise ArchitectureError(f"unreadable mlp_act_skip tuple {arch!r}")
                return self._check(values, arch)
            if "|" in text:
                return self._from_string(text)
            raise ArchitectureError(
                f"unreadable mlp_act_skip architecture {arch!r}: expected 'act-act-...|j>l,...' "
                f"or a tuple of {self.length} ints"
            )
        if isinstance(arch, np.ndarray):
            arch = arch.tolist()
        if isinstance(arch, (tuple, list)):
            return self._check(arch, arch)
        raise ArchitectureError(f"mlp_act_skip architecture of unsupported type {type(arch).__name__}: {arch!r}")

    def _check(self, values: Sequence[Any], original: Any) -> Arch:
        if len(values) != self.length:
            raise ArchitectureError(
                f"mlp_act_skip architecture of depth {self.depth} needs {self.length} ints ({self.depth} "
                f"activations + {len(self.pairs)} skip bits), got {len(values)}: {original!r}"
            )
        out = []
        for pos, v in enumerate(values):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
                raise ArchitectureError(f"mlp_act_skip entry {v!r} is not an int in {original!r}")
            v = int(v)  # numpy ints would spell hashes as "np.int64(1)" under numpy 2
            if pos < self.depth and not 0 <= v < NUM_ACTIVATIONS:
                raise ArchitectureError(
                    f"mlp_act_skip activation index {v} of layer {pos + 1} out of range 0..{NUM_ACTIVATIONS - 1} "
                    f"in {original!r}"
                )
            if pos >= self.depth and v not in (0, 1):
                j, l = self.pairs[pos - self.depth]
                raise ArchitectureError(f"mlp_act_skip skip bit for {j}>{l} must be 0 or 1, got {v} in {original!r}")
            out.append(v)
        return tuple(out)

    def _from_string(self, text: str) -> Arch:
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
        skips = ",".join(f"{j}>{l}" for (j, l), bit in zip(self.pairs, arch[self.depth :]) if bit)
        return f"{acts}|{skips}"

    def hash(self, arch: Any) -> str:
        return str(self.parse(arch))

    # ------------------------------------------------------------------ neighbourhoods

    def sample(self, rng: np.random.Generator) -> Arch:
        acts = rng.integers(0, NUM_ACTIVATIONS, size=self.depth)
        bits = rng.integers(0, 2, size=len(self.pairs))
        return tuple(int(v) for v in np.concatenate([acts, bits]))

    def mutate(self, arch: Any, rng: np.random.Generator) -> Arch:
        # one position, uniformly: a layer gets another activation, or a skip bit flips
        arch = list(self.parse(arch))
        pos = int(rng.integers(self.length))
        if pos < self.depth:
            choices = [a for a in range(NUM_ACTIVATIONS) if a != arch[pos]]
            arch[pos] = choices[int(rng.integers(len(choices)))]
        else:
            arch[pos] = 1 - arch[pos]
        return tuple(arch)

    def neighbours(self, arch: Any) -> list[Arch]:
        arch = self.parse(arch)
        out = [arch[:p] + (a,) + arch[p + 1 :] for p in range(self.depth) for a in range(NUM_ACTIVATIONS) if a != arch[p]]
        out.extend(arch[:p] + (1 - arch[p],) + arch[p + 1 :] for p in range(self.depth, self.length))
        return out

    def all(self) -> Iterator[Arch]:
        return itertools.product(*[range(NUM_ACTIVATIONS)] * self.depth, *[range(2)] * len(self.pairs))

    # ------------------------------------------------------------------ model

    def build_model(self, arch: Any, dataset: str) -> nn.Module:
        info = dataset_info(self.check_dataset(dataset))
        arch = self.parse(arch)
        skips = [pair for pair, bit in zip(self.pairs, arch[self.depth :]) if bit]
        return MLPActSkipNetwork(arch[: self.depth], skips, info.features, self.width,
                                 info.num_classes)


class MLPActSkipNetwork(nn.Module):
    """h_0 = W_0 x; h_l = sigma_l(W_l h_{l-1}) + sum of the chosen h_j; output W_out h_L."""

    def __init__(self, activations: Sequence[int], skips: Sequence[tuple[int, int]], in_features: int,
                 width: int, num_classes: int):
        super().__init__()
        self.embed = nn.Linear(in_features, width)
        self.layers = nn.ModuleList(nn.Linear(width, width) for _ in activations)
        self.activations = nn.ModuleList(activation_module(a) for a in activations)
        self.classifier = nn.Linear(width, num_classes)
        # sources[l - 1]: the earlier states added to h_l
        self.sources = [[j for j, t in skips if t == l] for l in range(1, len(activations) + 1)]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        states = [self.embed(x)]
        for layer, act, sources in zip(self.layers, self.activations, self.sources):
            h = act(layer(states[-1]))
            for j in sources:
                h = h + states[j]
            states.append(h)
        return self.classifier(states[-1])
