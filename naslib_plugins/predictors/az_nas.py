"""AZ-NAS (Lee & Ham, CVPR 2024): expressivity, progressivity and trainability of a network at a
Kaiming re-initialisation, and their rank aggregate with the network's complexity, as
docs/design/rankers.md section 2 specifies them from the authors' code (cvlab-yonsei/AZ-NAS,
NB201/ZeroShotProxy/compute_az_nas_score.py and NB201/tss_general.ipynb).

One pass gives the three scores: on a copy of the network, every Conv2d and Linear weight is
redrawn Kaiming normal (fan in, ReLU gain: std sqrt(2 / fan_in)) with zero biases, every affine
BatchNorm2d and GroupNorm gets weight 1 and bias 0 (running buffers untouched); in train mode it
runs on a N(0, 1) batch of `batch_size` inputs of the batches' input shape, and the features
F_0..F_L are the outputs of the network's `feature_modules()`: its stem and every cell or block,
in order (NB201: stem, 15 cells, 2 residual blocks = 18 maps).

- expressivity: sum over l of the entropy of the normalised eigenvalues of F_l's channel
  covariance (the (B*H*W) x C matrix of F_l, columns centred, X^T X / (B*H*W)).
- progressivity: the smallest increase of that entropy from one feature to the next.
- trainability: for each consecutive pair (l = L down to 1), a Rademacher probe v on F_l, the
  vector-Jacobian product g = (dF_l / dF_{l-1})^T v, pixel-unshuffled to F_l's resolution (by
  r = ceil(H_{l-1} / H_l), after zero rows and columns at the bottom and right where H_{l-1} is
  not a multiple of H_l, which the official code cannot score); with
  sigma the largest singular value of G^T V / N (rows: samples x positions), the pair scores
  2 - sigma - 1 / (sigma + 1e-6), or -inf when g is v itself (an identity Jacobian); the score
  is their mean.
An entropy the official float32 formula leaves undefined only through round-off (an eigenvalue
of a rank-deficient covariance below -1e-8 of the sum) is taken with the eigenvalues clamped at
zero, their exact value; this differs from the official code, which then ranks the architecture
at the bottom (38 of 1000 NB201 CIFAR-10 cells, whose deep features collapse; NB301's linear
stem on most cells; TNB's last stage at 64x64 input). Each of the three is -inf where it comes
out NaN (an all-zero feature map, whose eigenvalues sum to zero; or a pair with an identity
Jacobian for trainability), which the scoring engine records as a failure with the reason
"non-finite score -inf"; `az_nas` ranks such values at the bottom rather than dropping them.

The vector-Jacobian products are taken block by block: each feature is passed on to the rest of
the network as a detached leaf, so that d F_l / d F_{l-1} is exactly the Jacobian of the segment
between the two, as the official `autograd.grad(F_l, F_{l-1}, v)` computes it on the whole graph.
A feature that does not depend on the one before (NB201's cells whose output node receives only
`none` edges, and the cells after them; TNB's `new_zeros` nodes) gets g = 0: our networks leave
`none` edges out and put detached zeros in input-less nodes, where the official network multiplies
by zero in the graph, and the gradient through such a path is exactly zero there (a ReLU at zero
or the product with zero ends it), so both give g = 0, sigma = 0 and 2 - 1e6.

Supported spaces: those whose networks have `feature_modules()`: nasbench201 (the official
features), nasbench101 (stem and the 9 cells; pairs across a max-pool are unshuffled by 2),
nasbench301 (stem and the cells; the Jacobian of a cell w.r.t. the output of the cell before it,
the one before that held fixed) and transbench101 micro/macro (the encoder's stem and cells or
blocks; the decoder is not used; for jigsaw the nine tiles are stacked on the batch axis, so batch
norms see all tiles at once, where the network's forward runs the encoder once per tile).
mlp_act_skip has no feature maps and fails with that reason.
"""
from __future__ import annotations

import math
import zlib

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from naslib_plugins.data.batches import BatchSource
from naslib_plugins.errors import UserError
from naslib_plugins.predictors.base import (
    _CACHE_ATTR,
    PREDICTORS,
    LossFn,
    Predictor,
    Requirements,
    _note_read,
    _timed,
    hooked,
    model_device,
    private_copy,
    shared_seed,
)
from naslib_plugins.predictors.ensemble import Ensemble
from naslib_plugins.predictors.model_stats import Flops

DEFAULT_BATCH_SIZE = 64  # the official search loader's batch (tss_general.ipynb)
_ENTROPY_EPS = 1e-8  # inside the log of the eigenvalue entropy
_SIGMA_EPS = 1e-6  # in 1 / (sigma + eps) of trainability


def _check_batch_size(name: str, batch_size) -> int:
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 2:
        raise UserError(f"{name} batch_size must be an integer of at least 2, got {batch_size!r}")
    return batch_size


def kaiming_fan_in_(model: nn.Module, generator: torch.Generator | None = None) -> None:
    """The authors' `init_model(model, "kaiming_norm_fanin")`, in place: Conv2d and Linear weights
    N(0, 2 / fan_in), their biases 0; affine BatchNorm2d and GroupNorm weight 1, bias 0; running
    buffers untouched. The draws are made on the CPU (from `generator`, else torch's global one)
    in module order and copied to the weights' device, so they do not depend on the device."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                w = m.weight
                fan_in = w[0].numel()
                std = math.sqrt(2.0) / math.sqrt(fan_in)
                w.copy_(torch.empty(w.shape, dtype=w.dtype).normal_(0.0, std, generator=generator))
                if m.bias is not None:
                    m.bias.zero_()
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)) and m.affine:
                m.weight.fill_(1.0)
                m.bias.zero_()


def model_seed(model: nn.Module) -> int:
    """A seed that is a function of the model's parameters (CRC-32 of their float32 bytes)."""
    crc = 0
    with torch.no_grad():
        for p in model.parameters():
            crc = zlib.crc32(p.detach().float().cpu().contiguous().numpy().tobytes(), crc)
    return crc


def feature_modules(model: nn.Module) -> list[nn.Module]:
    if not hasattr(model, "feature_modules"):
        raise TypeError(f"AZ-NAS reads the stem and every cell's output, and {type(model).__name__} "
                        f"lists none (no feature_modules)")
    return list(model.feature_modules())


def _entropy(eigenvalues: torch.Tensor) -> float:
    p = eigenvalues / eigenvalues.sum()
    return float((-p * torch.log(p + _ENTROPY_EPS)).sum())


@torch.no_grad()
def eigen_entropy(feature: torch.Tensor) -> float:
    """Entropy of the normalised eigenvalues of a (B, C, H, W) map's channel covariance, in float32
    as the official code: -sum p log(p + 1e-8), p = s / sum(s); NaN for an all-zero map."""
    b, c, h, w = feature.shape
    x = feature.detach().permute(0, 2, 3, 1).reshape(b * h * w, c).float()
    x = x - x.mean(dim=0, keepdim=True)
    sigma = x.T @ x / x.shape[0]
    s = torch.linalg.eigvalsh(sigma)
    entropy = _entropy(s)
    if math.isnan(entropy):
        # A rank-deficient covariance has zero eigenvalues, and float32 round-off can put one below
        # -1e-8 of the sum, where the official log is undefined: NB301's stem (a conv of 27 input
        # values to 3C channels, no ReLU), TNB's last stage at 64x64 (fewer rows than channels).
        # Their exact value, zero, gives the entropy the formula means;
        # where the official value exists it is kept bit for bit.
        entropy = _entropy(s.clamp_min(0))
    return entropy


def pair_trainability(f_in: torch.Tensor, f_out: torch.Tensor, probe: torch.Tensor) -> float:
    """2 - sigma - 1 / (sigma + 1e-6) of one consecutive pair (see the module docstring); -inf for
    an identity Jacobian. `f_in` must be a leaf that requires grad."""
    if f_out is f_in:
        g = probe
    elif not f_out.requires_grad:
        g = None
    else:
        (g,) = torch.autograd.grad(f_out, f_in, probe, allow_unused=True)
    if g is None:  # F_l does not depend on F_{l-1}: the official zero path gives exactly 0
        g = torch.zeros_like(f_in)
    if g.shape == probe.shape and torch.equal(g, probe):
        return -math.inf
    bo, co, ho, wo = probe.shape
    if g.shape[2:] != probe.shape[2:]:
        hi, wi = g.shape[2:]
        r = -(-hi // ho)
        if hi < ho or wi < wo or -(-wi // wo) != r:
            raise ValueError(f"AZ-NAS trainability: feature {tuple(g.shape[1:])} -> {tuple(probe.shape[1:])} "
                             f"is not a downsampling by one factor")
        # A stride-2 layer takes 3x3 to 2x2 (TNB jigsaw's tiles at 64 px), where the official
        # int(hi / ho) = 1 leaves rows that do not line up and its matmul raises. Zero rows
        # at the bottom and right give the grouping the official unshuffle makes on even sizes
        # (output j takes inputs rj .. rj + r - 1), and zeros add nothing to G^T V.
        g = F.pixel_unshuffle(F.pad(g, (0, r * wo - wi, 0, r * ho - hi)), r)
    n = bo * ho * wo
    g_rows = g.permute(0, 2, 3, 1).reshape(n, -1)
    v_rows = probe.permute(0, 2, 3, 1).reshape(n, co)
    sigma = float(torch.linalg.svdvals(g_rows.T @ v_rows / n).max())
    return -sigma - 1.0 / (sigma + _SIGMA_EPS) + 2.0


def rademacher(shape: torch.Size, generator: torch.Generator | None = None) -> torch.Tensor:
    """+-1 with probability 1/2 each, on the CPU: the official `(bernoulli(0.5) - 0.5) * 2`, bit for
    bit and leaving the generator in the same state (tests/test_rankers.py checks both), 4-5x faster.
    CPU torch draws bernoulli(p) of a float tensor as uniform < p, the uniform being one 32-bit word's
    low 24 bits times 2**-24, one word per element; `random_(0, 2**24)` reads those same bits, in
    the same order, without bernoulli's per-element probability tensor."""
    draws = torch.empty(shape).random_(0, 1 << 24, generator=generator)
    return draws.lt_(1 << 23).mul_(2).sub_(1)


class AZScores(dict):
    """expressivity, progressivity, trainability (floats; -inf where NaN), and `entropies`."""


def _nan_to_minus_inf(x: float) -> float:
    return -math.inf if math.isnan(x) else float(x)


def az_scores(model: nn.Module, input_shape: tuple[int, ...], batch_size: int = DEFAULT_BATCH_SIZE,
              generator: torch.Generator | None = None) -> AZScores:
    """The three AZ-NAS scores of `model` (which it re-initialises in place: pass a copy), its
    random draws (weights, input, probes) from `generator` on the CPU."""
    modules = feature_modules(model)
    device = model_device(model)
    kaiming_fan_in_(model, generator)
    x = torch.randn((batch_size, *input_shape), generator=generator).to(device)
    run = getattr(model, "feature_forward", model)
    outputs: dict[int, torch.Tensor] = {}  # position -> F_l as the module gave it
    leaves: dict[int, torch.Tensor] = {}  # position -> F_l as passed on, a leaf

    positions = {id(m): k for k, m in enumerate(modules)}

    def hook(module: nn.Module, inputs, output):
        position = positions[id(module)]
        if position in outputs:
            raise RuntimeError(f"AZ-NAS feature module {position} ({type(module).__name__}) ran twice in one forward")
        if not isinstance(output, torch.Tensor) or output.dim() != 4:
            raise TypeError(f"AZ-NAS needs (B, C, H, W) feature maps; feature module {position} gave "
                            f"{type(output).__name__} {tuple(getattr(output, 'shape', ()))}")
        outputs[position] = output
        leaves[position] = output.detach().requires_grad_(True)
        return leaves[position]

    model.train()
    with hooked(modules, hook), torch.enable_grad():
        run(x)
    if len(outputs) != len(modules):
        raise RuntimeError(f"AZ-NAS: {len(modules) - len(outputs)} of the {len(modules)} feature modules did not run")
    entropies = np.array([eigen_entropy(outputs[k]) for k in range(len(modules))])
    with np.errstate(invalid="ignore"):
        expressivity = float(np.sum(entropies))
        progressivity = float(np.min(entropies[1:] - entropies[:-1])) if len(entropies) > 1 else math.nan
    terms = []
    for k in reversed(range(1, len(modules))):
        f_out = outputs[k]
        probe = rademacher(f_out.shape, generator).to(device)
        terms.append(pair_trainability(leaves[k - 1], f_out, probe))
    with np.errstate(invalid="ignore"):
        trainability = float(np.mean(terms)) if terms else math.nan
    return AZScores(expressivity=_nan_to_minus_inf(expressivity), progressivity=_nan_to_minus_inf(progressivity),
                    trainability=_nan_to_minus_inf(trainability), entropies=entropies.tolist())


def shared_az_scores(model: nn.Module, batches: BatchSource, batch_size: int) -> AZScores:
    """`az_scores` on a private copy of `model`, computed once per model inside
    `base.shared_gradients` for the three predictors that read it. Its draws come from a generator
    seeded by the engine's seed of the architecture (run seed, hash), so the three scores come from
    one pass whichever of them asks first, or alone, on every device and CPU kernel path. Outside
    the engine (a NASLib graph through the adapter) the seed is `model_seed(model)`, a CRC of the
    weights: PyTorch's default init differs in the last bits between CPU kernel paths, so that
    seed, and every draw, is the same only where the kernels are."""
    cache = getattr(model, _CACHE_ATTR, None)
    key = ("az_nas", tuple(batches.input_shape), batch_size)
    if cache is not None and key in cache:
        _note_read(cache, key)
        return cache[key]
    seed = shared_seed(model)
    generator = torch.Generator().manual_seed(model_seed(model) if seed is None else seed)
    net = private_copy(model)
    device = model_device(net)
    with _timed(cache, key, torch.empty(0, device=device)):
        out = az_scores(net, tuple(batches.input_shape), batch_size, generator)
    if cache is not None:
        cache[key] = out
    return out


class _AZComponent(Predictor):
    component: str

    def __init__(self, batch_size: int = DEFAULT_BATCH_SIZE):
        self.batch_size = _check_batch_size(type(self).__name__, batch_size)

    def requirements(self) -> Requirements:
        # a Gaussian batch of the input shape, drawn here: no batch is read
        return Requirements(batches=0, labels=False, train_mode=True)

    def score(self, model: nn.Module, batches: BatchSource, loss_fn: LossFn) -> float:
        return shared_az_scores(model, batches, self.batch_size)[self.component]


@PREDICTORS.register("az_expressivity")
class AZExpressivity(_AZComponent):
    """AZ-NAS expressivity: the sum over the stem and every cell/block output of the entropy of
    the normalised eigenvalues of its channel covariance (Kaiming re-init, Gaussian batch, train
    mode); -inf when a feature map is all zero."""

    component = "expressivity"


@PREDICTORS.register("az_progressivity")
class AZProgressivity(_AZComponent):
    """AZ-NAS progressivity: the smallest increase of that eigenvalue entropy from one feature to
    the next (may be negative); -inf when a feature map is all zero."""

    component = "progressivity"


@PREDICTORS.register("az_trainability")
class AZTrainability(_AZComponent):
    """AZ-NAS trainability: the mean over consecutive feature pairs of 2 - sigma - 1/(sigma + 1e-6),
    sigma the largest singular value of a Rademacher-probed estimate of the block's channel
    Jacobian; -inf when a block's Jacobian is the identity."""

    component = "trainability"


def conv_linear_flops(model: nn.Module, x: torch.Tensor) -> float:
    """Multiply-accumulates per input sample of the Conv2d and Linear layers on input x, plus one
    per output element of each bias: xautodl's count (utils/flop_benchmark.py), the FLOPs the
    NATS-Bench API reports. Batch norm, activations and pooling are not counted; every layer that
    runs counts, once per run."""
    total = 0

    def hook(module: nn.Module, inputs, output) -> None:
        nonlocal total
        if isinstance(module, nn.Conv2d):
            kh, kw = module.kernel_size
            positions = output.shape[0] * output.shape[2] * output.shape[3]
            total += kh * kw * module.in_channels * module.out_channels // module.groups * positions
            if module.bias is not None:
                total += module.out_channels * positions
        elif isinstance(module, nn.Linear):
            rows = inputs[0].numel() // module.in_features
            total += rows * module.in_features * module.out_features
            if module.bias is not None:
                total += rows * module.out_features

    with hooked([m for m in model.modules() if isinstance(m, (nn.Conv2d, nn.Linear))], hook), torch.no_grad():
        model(x)
    return total / x.shape[0]


@PREDICTORS.register("flops_conv")
class ConvFlops(Flops):
    """FLOPs in millions as NATS-Bench counts them (xautodl): conv and linear multiply-accumulates
    and biases only, on one input in eval mode; AZ-NAS's complexity. (`flops` adds batch norm,
    activations and pooling, as tensorwatch and NASLib count them.)"""

    count = staticmethod(conv_linear_flops)


# ------------------------------------------------------------------------ set level

@PREDICTORS.register("az_nas")
class AZNAS(Ensemble):
    """AZ-NAS's rank aggregate over the evaluated set: sum of log(rank / N) of flops_conv (the
    NATS complexity), az_expressivity, az_progressivity and az_trainability (tss_general.ipynb
    cell 8), with the ensemble's rule for failed scores, which is AZ-NAS's own."""

    def __init__(self):
        super().__init__(["flops_conv", "az_expressivity", "az_progressivity", "az_trainability"])
