"""MeCo (Jiang, Wang & Bie, NeurIPS 2023): the minimum eigenvalue of the Pearson correlation of
an untrained network's feature maps, summed over its modules.

For every firing of a hooked module on one input sample, its output F (C channels at P
positions) gives R = corr(F), the C x C Pearson correlation between channels across positions;
entries that are NaN or infinite (a constant channel) are set to 0, and the term is
lambda_min(R). `meco` = the sum of the terms, each counted as often as the authors' network
counts that tensor (see below). A flat output (logits, pooled vectors: one value per channel)
has all-NaN correlations, so its term is exactly 0. `meco_opt` takes, per firing, the
correlation of 8 channels drawn at random and multiplies its lambda_min by C/8.

What was read: HamsterMimi/MeCo @ 0d830dd (correlation/NAS_Bench_201.py:get_score,
correlation/foresight/pruners/measures/meco.py, the models under correlation/foresight/models);
the spec is docs/design/rankers.md, section 4. The network runs in train mode (batch statistics),
without gradients, on the model's own initialisation; the weights are not changed.

Spaces:

- nasbench201 (as the published NB201 figures were computed): one real image, sample 0 of
  batch 0, resized bilinearly to 32 x 32 when it has another size (ImageNet16-120: the authors'
  loader resizes its 16-pixel images to `--data_size 32`). The authors hook every module of
  Zero-Cost-NAS's `NAS201Model`, whose wrappers return their child's tensor again, so each tensor
  counts once per module that returns it. Our module tree differs, so the same tensors are
  hooked here with the authors' multiplicities: stem conv x1, stem BN x3; per conv edge ReLU x1,
  conv x1, BN x3; avg-pool edge x2; skip edge x1; cell output x1, plus 1 for the last cell of
  each stage; residual block: its two ReLU-conv-BN as conv edges, shortcut pool x1, shortcut
  conv x2, output x1; head BN x1, head ReLU x2. `none` edges contribute 0 in both trees. Our
  cells' BN is affine and their convs have no bias, the authors' the opposite; at initialisation
  (BN weight 1, bias 0, batch statistics) the hooked correlations are the same, since a Pearson
  correlation ignores a per-channel shift.
- nasbench101 (as the published NB101 figures were computed): the authors' NB101 meco ignores the
  data and feeds one N(0, 1) sample of 3 x 64 x 64, drawn here from torch's seeded generator.
  Their multiplicities: vertex conv op ReLU x4, projection and stem ReLU x3, every conv and BN x1,
  vertex max-pool x2, max-pool between stacks x1, cell output x1. Deviation: the authors'
  `nasbench1.Network` initialises conv weights N(0, sqrt(2 / (k^2 C_out))) and linear weights
  N(0, 0.01); ours keeps PyTorch's default initialisation (as every predictor here sees it).
- nasbench301, transbench101_micro/macro: no official code. Ours, as the spec proposes: sample 0
  of batch 0, every module the network runs hooked once per firing (the root and wrappers
  included, as the authors' rule does on their own trees). TNB jigsaw runs the encoder once per
  tile of the image; one tile alone is a batch of one, whose train-mode batch norm is undefined
  once a map is 1 x 1 (the last stage at 64 x 64 input, 21-pixel tiles). So the image's nine
  tiles run through the encoder together, as AZ-NAS's features do (`feature_forward`: batch
  statistics over the nine), and each tile of each encoder module's output gives its term, nine
  per module as the per-tile forward fires it; the head's outputs are flat and add 0.
  TNB macro at 64 x 64 brings the networks with four downsampling blocks (the most the space has,
  about a fifth of them) to a 1 x 1 map, where a train-mode batch norm of the single sample sees
  one value per channel, which PyTorch refuses. There its formula, (x - mean) / sqrt(var + eps)
  * w + b with x = mean, gives b, and that is its output here (`single_value_batch_norm`). Every
  map after a 1 x 1 one in those encoders is 1 x 1 or flat, whose term is 0 whatever its values,
  so the score is the sum of the terms the benchmark's 256-pixel input also defines at those
  modules; a decoder's upsampled maps read the bias like any other input.
- mlp_act_skip (and any network without feature maps) is refused: every output is a flat
  vector, so every term would be 0.

Numerics: the correlation and its eigenvalues are computed in float64 with a symmetric solver
(the authors: float32 `torch.linalg.eig`, the minimum real part; they agree to ~1e-6). The
authors drop NaN or infinite terms; with the non-finite entries zeroed there are none. A map with
no more positions than channels (every deep layer: 512 channels at 8 x 8) has a correlation of
rank below its size, whose lambda_min is 0: that term is 0 without a solve (the solver's answer
was rounding residue, ~1e-15); with one solve per tensor (below) `meco` runs 2x (NB101) to 74x
(TNB jigsaw) faster (perf/bench_meco.py).

`meco_opt`: the 8 rows are drawn with torch's generator (the authors: python's unseeded
`random.sample`), independently for each counted firing. Deviation: with fewer than 8 channels
the authors' code raises; here every channel is used (factor C/C = 1, the `meco` term). NB201's
narrowest map has 16 channels, so its scores are not affected.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from naslib_plugins.data.batches import BatchSource
from naslib_plugins.predictors.base import PREDICTORS, LossFn, Predictor, Requirements, hooked

OPT_ROWS = 8  # channels meco_opt samples per firing
NB201_SIDE = 32  # the authors' --data_size: NB201 inputs are resized to it
NB101_INPUT = (1, 3, 64, 64)  # the authors' NB101 meco: one Gaussian sample of this shape


def output_tensor(output: object) -> torch.Tensor | None:
    """The tensor the authors' hook reads of a module's output (of a tuple, its first); None when
    it has no sample dimension to read."""
    if isinstance(output, (tuple, list)):
        output = output[0] if output else None
    if not isinstance(output, torch.Tensor) or output.dim() < 2:
        return None
    return output


def channel_rows(output: object, sample: int = 0) -> torch.Tensor | None:
    """One sample of a module's output as a (channels, positions) matrix, as the authors' hook
    reads it (`output[0]`; of a tuple, its first tensor's first sample); None when there is no
    such sample to read."""
    tensor = output_tensor(output)
    if tensor is None:
        return None
    one = tensor[sample]
    return one.reshape(one.shape[0], -1)


def min_correlation_eigenvalue(rows: torch.Tensor, low_rank_zero: bool = True) -> float:
    """lambda_min of the rows' Pearson correlation matrix, its NaN and infinite entries set to 0
    (a constant row gives a zero row and column). One position only: every entry is NaN, so 0.
    low_rank_zero=False solves where the rank alone gives 0 (perf/bench_meco.py's baseline)."""
    n, positions = rows.shape
    if positions < 2:
        return 0.0
    if low_rank_zero and positions <= n and bool(torch.isfinite(rows).all()):
        # The correlation of finite rows is positive semi-definite of rank at most positions - 1
        # (the centred rows span no more), and a zeroed constant row keeps it so: lambda_min is 0
        # exactly, where a solver returns rounding residue (~1e-15) at the cost of an n x n solve.
        return 0.0
    corr = torch.corrcoef(rows.detach().double()).reshape(n, n)
    corr = torch.where(torch.isfinite(corr), corr, torch.zeros_like(corr))
    return float(torch.linalg.eigvalsh(corr)[0])


def _nb201_multiplicities(model: nn.Module) -> dict[nn.Module, int]:
    """How many modules of the authors' NAS201Model return each tensor our NB201Network's
    modules output (see the module docstring); modules left out count 0."""
    from naslib_plugins.spaces.nasbench201.network import Cell, ReLUConvBN, ResidualReduction

    counts: dict[nn.Module, int] = {model.stem[0]: 1, model.stem[1]: 3, model.head[0]: 1, model.head[1]: 2}

    def relu_conv_bn(op: ReLUConvBN) -> None:
        counts.update({op[0]: 1, op[1]: 1, op[2]: 3})

    layers = list(model.cells)
    for i, layer in enumerate(layers):
        if isinstance(layer, ResidualReduction):
            counts[layer] = 1
            relu_conv_bn(layer.conv_a)
            relu_conv_bn(layer.conv_b)
            counts[layer.downsample[0]] = 1
            counts[layer.downsample[1]] = 2
        elif isinstance(layer, Cell):
            stage_end = i + 1 == len(layers) or isinstance(layers[i + 1], ResidualReduction)
            counts[layer] = 2 if stage_end else 1
            for edge in layer.edges:
                if isinstance(edge, ReLUConvBN):
                    relu_conv_bn(edge)
                elif isinstance(edge, nn.AvgPool2d):
                    counts[edge] = 2
                else:  # skip (an Identity; the Identity of a `none` edge never runs)
                    counts[edge] = 1
        else:
            raise TypeError(f"meco: unexpected NB201 layer {type(layer).__name__}")
    return counts


def _nb101_multiplicities(model: nn.Module) -> dict[nn.Module, int]:
    """How many modules of the authors' nasbench1.Network return each tensor our NB101Network's
    modules output (see the module docstring); modules left out count 0 (the `cells` Sequential
    stands where theirs is a ModuleList that never runs)."""
    from naslib_plugins.spaces.nasbench101.network import Cell

    def conv_bn_relu(op: nn.Sequential, relu: int) -> dict[nn.Module, int]:
        return {op[0]: 1, op[1]: 1, op[2]: relu}

    counts = conv_bn_relu(model.stem, 3)
    for layer in model.cells:
        if isinstance(layer, nn.MaxPool2d):
            counts[layer] = 1
            continue
        if not isinstance(layer, Cell):
            raise TypeError(f"meco: unexpected NB101 layer {type(layer).__name__}")
        counts[layer] = 1
        for op in layer.vertex_ops.values():
            counts.update({op: 2} if isinstance(op, nn.MaxPool2d) else conv_bn_relu(op, 4))
        for op in layer.projections.values():
            counts.update(conv_bn_relu(op, 3))
    return counts


@contextmanager
def single_value_batch_norm(model: nn.Module) -> Iterator[None]:
    """For the block, a train-mode batch norm of every module of `model` that sees one value per
    channel (one sample, a 1 x 1 map) outputs its bias, what its formula gives there, instead of
    raising; every other input runs the module's own forward."""
    norms = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]

    def patched(bn: nn.modules.batchnorm._BatchNorm) -> Callable[[torch.Tensor], torch.Tensor]:
        def forward(x: torch.Tensor) -> torch.Tensor:
            if bn.training and x.numel() == x.shape[1]:
                shift = bn.bias if bn.affine else torch.zeros(x.shape[1], dtype=x.dtype, device=x.device)
                return shift.reshape(1, -1, *([1] * (x.dim() - 2))).expand_as(x).clone()
            return type(bn).forward(bn, x)
        return forward

    for bn in norms:
        bn.forward = patched(bn)
    try:
        yield
    finally:
        for bn in norms:
            del bn.forward


@dataclass
class HookPlan:
    counts: dict[nn.Module, int]  # module -> how often each of its firings counts
    x: torch.Tensor  # the input
    run: Callable[[torch.Tensor], object]  # what runs it: the model, or its encoder on jigsaw tiles
    samples: int = 1  # the samples of each output that give a term: TNB jigsaw's 9 tiles of one image


def hook_plan(model: nn.Module, x: torch.Tensor) -> HookPlan:
    """What MeCo hooks and runs, per space: the authors' multiplicities and input on NB201 and
    NB101, every module once on one sample of `x` elsewhere (TNB jigsaw: every encoder module on
    the sample's nine tiles together, a term per tile)."""
    from naslib_plugins.data.tasks import NUM_TILES
    from naslib_plugins.spaces.nasbench101.network import NB101Network
    from naslib_plugins.spaces.nasbench201.network import NB201Network
    from naslib_plugins.spaces.transbench101.network import TNBNet

    if isinstance(model, NB201Network):
        x = x[:1]
        if tuple(x.shape[-2:]) != (NB201_SIDE, NB201_SIDE):
            x = F.interpolate(x, size=(NB201_SIDE, NB201_SIDE), mode="bilinear", align_corners=False)
        return HookPlan(_nb201_multiplicities(model), x, model)
    if isinstance(model, NB101Network):
        return HookPlan(_nb101_multiplicities(model), torch.randn(NB101_INPUT).to(device=x.device, dtype=x.dtype),
                        model)
    if isinstance(model, TNBNet) and model.kind == "jigsaw":
        return HookPlan({m: 1 for m in model.encoder.modules()}, x[:1], model.feature_forward, NUM_TILES)
    return HookPlan({m: 1 for m in model.modules()}, x[:1], model)


@PREDICTORS.register("meco")
class MeCo(Predictor):
    """Sum over the modules' firings on one sample of lambda_min(corr(feature map channels)),
    each firing counted as in the authors' network (module docstring: spaces, inputs, deviations)."""

    opt = False  # meco_opt: 8 sampled channels per firing, times C/8

    def requirements(self) -> Requirements:
        # batch 0's first sample (NB101: a Gaussian sample, as the authors' NB101 code; the batch
        # is still read, for its device)
        return Requirements(labels=False)

    def term(self, rows: torch.Tensor) -> float:
        if not self.opt:
            return min_correlation_eigenvalue(rows)
        n = rows.shape[0]
        if n <= OPT_ROWS:
            return min_correlation_eigenvalue(rows)
        pick = torch.randperm(n)[:OPT_ROWS].to(rows.device)  # drawn on the CPU: the same on every device
        return min_correlation_eigenvalue(rows[pick]) * n / OPT_ROWS

    def score(self, model: nn.Module, batches: BatchSource, loss_fn: LossFn) -> float:
        plan = hook_plan(model, batches.batch(0)[0])
        total = 0.0
        maps = 0  # firings whose output has more than one position
        # A wrapper (a Sequential, a cell, the root) returns its last child's tensor again: each
        # firing still counts, but its term is computed once per tensor. The tensors are held for
        # the pass so that an id is not reused; the version tells an in-place change. meco_opt
        # draws anew for every firing, so it computes every one.
        terms: dict[tuple[int, int, int], tuple[torch.Tensor, float]] = {}

        def term(tensor: torch.Tensor, sample: int) -> float:
            rows = channel_rows(tensor, sample)
            if self.opt:
                return self.term(rows)
            key = (id(tensor), tensor._version, sample)
            if key not in terms:
                terms[key] = (tensor, self.term(rows))
            return terms[key][1]

        def hook(module: nn.Module, inputs: tuple, output: object) -> None:
            nonlocal total, maps
            tensor = output_tensor(output)
            if tensor is None:
                return
            for sample in range(plan.samples):
                maps += tensor[sample].numel() > tensor.shape[1]
                count = plan.counts[module]
                for _ in range(count if self.opt else 1):  # meco_opt draws anew for each count
                    total += term(tensor, sample) * (1 if self.opt else count)

        model.train()
        with hooked([m for m, c in plan.counts.items() if c > 0], hook), single_value_batch_norm(model), \
                torch.no_grad():
            plan.run(plan.x)
        if not maps:
            raise TypeError(f"{'meco_opt' if self.opt else 'meco'} reads channel correlations across the positions "
                            f"of feature maps, and no module of {type(model).__name__} outputs one (every output "
                            "is a flat vector)")
        return total


@PREDICTORS.register("meco_opt")
class MeCoOpt(MeCo):
    """MeCo_opt: per counted firing, lambda_min of the correlation of 8 channels drawn at random,
    times C/8 (fewer than 8 channels: all of them); otherwise as `meco`."""

    opt = True
