"""SWAP (Peng, Song, Fayek, Ciesielski & Chang, ICLR 2024): the number of distinct sample-wise
activation patterns of an untrained network.

With the outputs of every `nn.ReLU` whose input is 4-D, flattened per sample and concatenated
into A (samples x units), each unit has a pattern: the on/off bits sign(A[:, u]) over the
samples. SWAP = the number of distinct patterns (the distinct rows of sign(A)^T), at most
min(units, 2^samples); a unit repeated in several hooks counts once by construction. The score
is the mean of SWAP over `repeats` re-initialisations: conv and linear weights N(0, 1) with zero
biases, BatchNorm2d and GroupNorm weights 1 and biases 0, each repeat drawn anew from torch's
seeded generator; the network runs in train mode without gradients, on a copy (the model keeps
its weights). The inputs are the first `samples` samples of batches 0 and 1 concatenated (real
images by default): batch 0's own first 16 when it holds 16, as the official first 16 training
images, and otherwise not capped at 2^(batch size) patterns; a `note` says when even the two
hold fewer. The same inputs serve every repeat.

`swap_reg` multiplies by the size regulariser exp(-(Theta - mu)^2 / sigma), Theta the number of
parameters in thousands (names containing "auxiliary" left out); sigma divides the squared
distance itself (not 2 sigma^2), and the factor is computed once per network.

What was read: pym1024/SWAP @ f6049f7 (src/metrics/swap.py, src/utils/utilities.py,
correlation.py: 16 input samples, 32 repeats); the spec is docs/design/rankers.md, section 5.

Open points and the choices made:
- mu and sigma are not in the official code, and the paper's values could not be read here.
  With none given (the default) the factor is 1, as the official `SWAP` class does without
  them, so `swap_reg` equals `swap` and its `note` says so; pass both to apply it
  (`get_predictor("swap_reg", mu=..., sigma=...)`, mu in thousands of parameters).
- The network scored is our full network at the benchmark's size on every space (the official
  DARTS correlation scores a one-cell C=3 proxy network; for NB201, NB101, NB301 and TNB no
  official code says which network).

Spaces: nasbench201, nasbench101, nasbench301, transbench101_micro/macro (the encoder's ReLUs; a
jigsaw encoder's nine tile passes all count; the TNB decoders' LeakyReLUs are not hooked, as in
the ICLR code). mlp_act_skip, with no ReLU on 4-D feature maps, is refused with a reason.

Counting: each unit's bits are packed into an integer (exact: by a float32 matmul with powers
of two up to 24 samples, by int64 shifts beyond), and the distinct integers are counted (a
presence table of 2^samples entries up to 20 samples, `torch.unique` beyond). Deviation: a NaN
activation (an overflowing re-initialised network) fails the score with a reason, where the
official `torch.sign` silently makes it 0 (off).

Saturation: the count is at most 2^16 = 65,536 with 16 samples, while our full networks have
1e5 to 1e7 post-ReLU units. NB201 counts crowd below the bound (17,000 to 63,500 on 20 random
cells); full NB101 and NB301 networks reach it or come within ~30 of it (65,510 to 65,536 on real
CIFAR-10 images), so they barely rank there. The official 16 samples and the full network are
kept all the same (which network the authors scored off DARTS is open), and a `note` counts the
repeats that reached the bound.
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn

from naslib_plugins.data.batches import BatchSource
from naslib_plugins.errors import UserError
from naslib_plugins.predictors.base import (
    PREDICTORS,
    LossFn,
    Predictor,
    Requirements,
    gaussian_init,
    hooked,
    private_copy,
)

_MATMUL_BITS = 24  # a float32 sum of distinct powers of two below 2^24 is exact
_TABLE_BITS = 20  # up to this many samples a presence table (2^20 bytes) replaces torch.unique
_CHUNK_BITS = 62  # bits packed per int64 column beyond _MATMUL_BITS samples


def per_sample(output: torch.Tensor) -> torch.Tensor:
    """The output as (samples, units), units in memory order (their order does not matter to a
    count), so a channels-last map is not copied."""
    if output.dim() == 4 and not output.is_contiguous() and output.is_contiguous(memory_format=torch.channels_last):
        output = output.permute(0, 2, 3, 1)
    return output.reshape(output.shape[0], -1)


def pack_patterns(signs: torch.Tensor) -> torch.Tensor:
    """Each unit's pattern over the samples (`signs`: samples x units, 0 or 1) as integers: int64
    of shape (units,) up to _MATMUL_BITS samples, else (units, columns) of _CHUNK_BITS bits each."""
    n = signs.shape[0]
    if n <= _MATMUL_BITS:
        powers = torch.pow(2.0, torch.arange(n, dtype=signs.dtype, device=signs.device))
        return (powers @ signs).long()
    bits = signs > 0
    columns = []
    for start in range(0, n, _CHUNK_BITS):
        code = torch.zeros(bits.shape[1], dtype=torch.int64, device=bits.device)
        for b in range(start, min(n, start + _CHUNK_BITS)):
            code |= bits[b].long() << (b - start)
        columns.append(code)
    return torch.stack(columns, dim=1)


def activation_patterns(model: nn.Module, x: torch.Tensor) -> int:
    """The number of distinct sample-wise activation patterns of `model` (as it is) on x: over the
    outputs of every nn.ReLU whose input is 4-D, one pattern per unit, its bits the signs of the
    unit's rectified values over the samples. Train mode, no gradients."""
    n = x.shape[0]
    table = torch.zeros(2**n, dtype=torch.bool, device=x.device) if n <= _TABLE_BITS else None
    codes: list[torch.Tensor] = []
    ran = 0

    def hook(module: nn.Module, inputs: tuple, output: torch.Tensor) -> None:
        nonlocal ran
        if inputs[0].dim() != 4:
            return
        if output.shape[0] != n:
            raise ValueError(f"swap: a ReLU's output has {output.shape[0]} samples, the input {n}")
        # one sum finds a NaN (the values are >= 0, so no inf - inf), where isnan().any() costs as much
        # as the rest of the hook; torch.sign would make a NaN 0 (off), as in the official code
        if torch.isnan(output.sum()):
            raise FloatingPointError("swap: NaN activations (the N(0, 1) re-initialised network overflowed)")
        ran += 1
        packed = pack_patterns(torch.sign(per_sample(output)).float())
        if table is not None:
            table[packed] = True
        else:
            codes.append(packed)

    model.train()
    with hooked([m for m in model.modules() if isinstance(m, nn.ReLU)], hook), torch.no_grad():
        model(x)
    if not ran:
        raise TypeError(f"swap counts the patterns of nn.ReLU outputs on 4-D feature maps, and "
                        f"{type(model).__name__} has no such ReLU")
    if table is not None:
        return int(table.sum())
    return int(torch.unique(torch.cat(codes), dim=0).shape[0])


def parameters_in_thousands(model: nn.Module) -> float:
    """The official size: parameters whose names do not contain "auxiliary", in thousands."""
    return sum(p.numel() for name, p in model.named_parameters() if "auxiliary" not in name) / 1e3


def size_factor(model: nn.Module, mu: float, sigma: float) -> float:
    """The official regulariser exp(-(Theta - mu)^2 / sigma), Theta in thousands of parameters."""
    return math.exp(-((parameters_in_thousands(model) - mu) ** 2) / sigma)


@PREDICTORS.register("swap")
class SWAP(Predictor):
    """Mean over `repeats` N(0, 1) re-initialisations of the number of distinct on/off patterns
    of the post-ReLU units across the first `samples` samples of batches 0 and 1 (module
    docstring: spaces, inputs, choices)."""

    def __init__(self, samples: int = 16, repeats: int = 32):
        for name, value in (("samples", samples), ("repeats", repeats)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UserError(f"{self._name()} {name} must be a positive integer, got {value!r}")
        self.samples = samples
        self.repeats = repeats
        self.note: str | None = None

    def _name(self) -> str:
        return "swap"

    def requirements(self) -> Requirements:
        # the first `samples` of batches 0 and 1 concatenated: batch 0's own when it holds enough,
        # so a batch smaller than 16 does not cap the count at 2^(its size) (the official 16 images)
        return Requirements(batches=2, labels=False)

    def factor(self, model: nn.Module) -> float:
        """What every repeat's count is multiplied by: 1 (swap_reg: the size regulariser)."""
        return 1.0

    def _notes(self) -> list[str]:
        return []

    def score(self, model: nn.Module, batches: BatchSource, loss_fn: LossFn) -> float:
        x = torch.cat([batches.batch(0)[0], batches.batch(1)[0]])[: self.samples]
        notes = self._notes()
        if len(x) < self.samples:
            notes.append(f"batches 0 and 1 hold {len(x)} samples, fewer than the {self.samples} {self._name()} reads")
        net = private_copy(model)
        factor = self.factor(net)
        counts = []
        for _ in range(self.repeats):
            gaussian_init(net)
            counts.append(activation_patterns(net, x))
        capped = sum(c == 2 ** len(x) for c in counts)
        if capped:
            notes.append(f"the count reached its bound 2^{len(x)} in {capped} of {self.repeats} repeats")
        self.note = "; ".join(notes) or None
        return factor * sum(counts) / len(counts)


@PREDICTORS.register("swap_reg")
class SWAPReg(SWAP):
    """`swap` times exp(-(Theta - mu)^2 / sigma), Theta the parameters in thousands; mu and sigma
    have no known default (module docstring): without them the factor is 1."""

    def __init__(self, samples: int = 16, repeats: int = 32, mu: float | None = None, sigma: float | None = None):
        super().__init__(samples, repeats)
        if (mu is None) != (sigma is None):
            raise UserError(f"swap_reg needs both mu and sigma, or neither; got mu={mu!r}, sigma={sigma!r}")
        if sigma is not None and not (isinstance(sigma, (int, float)) and sigma > 0 and math.isfinite(sigma)):
            raise UserError(f"swap_reg sigma must be a positive number, got {sigma!r}")
        if mu is not None and not (isinstance(mu, (int, float)) and math.isfinite(mu)):
            raise UserError(f"swap_reg mu must be a finite number (thousands of parameters), got {mu!r}")
        self.mu = mu
        self.sigma = sigma

    def _name(self) -> str:
        return "swap_reg"

    def factor(self, model: nn.Module) -> float:
        return 1.0 if self.mu is None else size_factor(model, self.mu, self.sigma)

    def _notes(self) -> list[str]:
        return ["no mu and sigma given: size factor 1, so swap_reg equals swap"] if self.mu is None else []
