"""Gradient-based proxies: NASI, ZiCo, SNIP, GraSP, SynFlow.

All of them see the network in train mode (batch statistics in BatchNorm) at its
random initialisation, as NASLib's `find_measures` does.
"""
from __future__ import annotations

import copy
import math

import torch
import torch.nn as nn

from naslib_plugins.data.batches import BatchSource
from naslib_plugins.hvp import HVP_HELP, FrozenKinks, check_hvp, fd_step, shifted, sq_norm
from naslib_plugins.predictors.base import (
    PREDICTORS,
    LossFn,
    Predictor,
    Requirements,
    batch_gradients,
    model_device,
    sum_over_layers,
    weight_layers,
)


@PREDICTORS.register("nasi")
class NASI(Predictor):
    """NASI's NTK trace-norm estimate (Shu et al., ICLR 2022, eq. 11):
    || (1/b) sum_x grad_theta L_x ||_2^2 over all parameters, i.e. the squared norm of the
    gradient of the mean mini-batch loss. The constant m/gamma is dropped: it ranks nothing."""

    def __init__(self, batches: int = 1):
        self.batches = batches

    def requirements(self) -> Requirements:
        return Requirements(batches=self.batches)

    def score(self, model: nn.Module, batches: BatchSource, loss_fn: LossFn) -> float:
        total = 0.0
        for i in range(self.batches):
            grads = batch_gradients(model, batches, i, loss_fn).values()
            total += sum(float(g.double().pow(2).sum()) for g in grads if g is not None)
        return total / self.batches


# Gradients that agree across the batches to within this relative spread count as ties, which ZiCo
# drops. Two float32 gradients of one weight can agree to ~1e-6 (weights whose gradient barely
# depends on the data), and then mean|g| / std g is rounding noise of up to ~1e7 that one kernel
# path or another moves by orders of magnitude: a few such weights decided a layer's log-sum
# (the AVX2 and AVX512 paths gave different scores). Genuine spreads are far above this.
ZICO_TIE = 1e-3


@PREDICTORS.register("zico")
class ZiCo(Predictor):
    """ZiCo (Li et al., ICLR 2023), as the authors' code computes it: for every conv/linear
    weight, mean |g| over N batches divided by std g (ddof 0) across them; per layer the log of
    the sum; the score is the sum over layers. The authors drop weights with zero std; here, in
    float64, weights whose std is at most ZICO_TIE x mean |g| (no spread float32 can measure) are
    dropped as ties, and `note` says how many were dropped that the exact rule would have kept."""

    def __init__(self, batches: int = 2):
        if batches < 2:
            raise ValueError("zico needs at least 2 batches to measure gradient spread")
        self.batches = batches
        self.note: str | None = None

    def requirements(self) -> Requirements:
        return Requirements(batches=self.batches)

    def score(self, model: nn.Module, batches: BatchSource, loss_fn: LossFn) -> float:
        layers = [m.weight for m in weight_layers(model)]
        if self.batches == 2:
            sums = _two_batch_ratio_sums(model, batches, loss_fn, layers)
        else:
            sums = _ratio_sums(model, batches, loss_fn, layers, self.batches)
        total = sum(math.log(ratio) for ratio, _ in sums if ratio != 0.0)
        guarded = sum(g for _, g in sums)
        self.note = f"{guarded} weights with gradient spread below {ZICO_TIE:g} x mean |g| dropped as ties" \
            if guarded else None
        return total


def _ratio_sums(model: nn.Module, batches: BatchSource, loss_fn: LossFn, layers: list[torch.Tensor],
                n: int) -> list[tuple[float, int]]:
    """Per layer: the sum of mean|g| / std g over its kept weights, and how many weights the tie
    guard dropped that the exact rule (std > 0) would have kept; n batches."""
    # one (n, numel) matrix per layer; grads are copied in, never aliased (see pitfalls)
    per_layer = [torch.empty(n, w.numel(), dtype=torch.float64, device=w.device) for w in layers]
    for i in range(n):
        grads = batch_gradients(model, batches, i, loss_fn)
        for rows, w in zip(per_layer, layers):
            g = grads.get(w)
            rows[i] = 0.0 if g is None else g.reshape(-1)
    sums = []
    for rows in per_layer:
        # torch's std along dim 0 of an (N, numel) matrix is ~20x slower than the two-pass
        # formula on CPU (it dominated zico's time)
        mean_abs = rows.abs().mean(dim=0)
        std = (rows - rows.mean(dim=0)).pow(2).mean(dim=0).sqrt()
        keep = std > ZICO_TIE * mean_abs
        sums.append((float((mean_abs[keep] / std[keep]).sum()), int((keep != (rows != rows[0]).any(dim=0)).sum())))
    return sums


# elements per step of the two-batch form: its float64 temporaries stay in cache
_CHUNK = 1 << 16


def _two_batch_ratio_sums(model: nn.Module, batches: BatchSource, loss_fn: LossFn,
                          layers: list[torch.Tensor]) -> list[tuple[float, int]]:
    """`_ratio_sums` for 2 batches in closed form: with g1, g2 one weight's gradients, mean|g| =
    (|g1| + |g2|)/2 and std g = |g1 - g2|/2 in float64, whose ratio and tie test need no /2. The
    same values as the general form to the last bits, in a few passes over chunks instead of
    ~20 over (2, numel) float64 matrices (the decoders of TNB's dense tasks hold 26 M weights)."""
    first = batch_gradients(model, batches, 0, loss_fn)
    # copied, never aliased (see pitfalls): the second pass may reuse the first one's buffers
    g1 = [None if first.get(w) is None else first[w].detach().reshape(-1).clone() for w in layers]
    second = batch_gradients(model, batches, 1, loss_fn)
    sums = []
    for w, a_all in zip(layers, g1):
        b_all = second.get(w)
        if a_all is None or b_all is None:  # a weight no loss reaches: a gradient of zeros
            zeros = torch.zeros(w.numel(), dtype=w.dtype, device=w.device)
            a_all = zeros if a_all is None else a_all
            b_all = zeros if b_all is None else b_all
        b_all = b_all.detach().reshape(-1)
        ratio = torch.zeros((), dtype=torch.float64, device=w.device)
        unequal = kept = 0
        for start in range(0, w.numel(), _CHUNK):
            a = a_all[start:start + _CHUNK].double()
            b = b_all[start:start + _CHUNK].double()
            unequal += int(torch.count_nonzero(a != b))  # what the exact rule keeps
            spread = (a - b).abs_()
            size = a.abs_().add_(b.abs_())
            keep = spread > ZICO_TIE * size
            # where, not a masked gather: a third of the time; the 0/0 it leaves out is never summed
            ratio += torch.where(keep, size / spread, 0.0).sum()
            kept += int(torch.count_nonzero(keep))
        sums.append((float(ratio), unequal - kept))
    return sums


@PREDICTORS.register("snip")
class SNIP(Predictor):
    """SNIP (Lee et al. 2019) as in Abdelfattah et al. 2021: sum over conv/linear weights of
    |dL/dmask| = |w * dL/dw|, one batch."""

    def score(self, model: nn.Module, batches: BatchSource, loss_fn: LossFn) -> float:
        grads = batch_gradients(model, batches, 0, loss_fn)
        return sum_over_layers(weight_layers(model), grads, lambda w, g: (w * g).abs().double().sum())


@PREDICTORS.register("grasp")
class GraSP(Predictor):
    """GraSP (Wang et al. 2020) as in Abdelfattah et al. 2021 / NASLib: sum of -w * (H g) over
    conv/linear weights, with g the loss gradient and H the Hessian, on one batch.

    hvp="exact": a double backward. NASLib runs two identical forward passes (one for g, one for
    the graph of g); in train mode they give the same tensors, so one pass with create_graph
    serves both. hvp="fd": H g ~ (grad L(w + eps g) - g) / eps, one-sided, with the ReLU pieces of
    the pass at w frozen in the shifted one (naslib_plugins.hvp); an O(eps) error that leaves
    the ranking of architectures as it is (tests/test_hvp.py) at a third of the cost."""

    param_help = {"temperature": "divides the logits", "hvp": f"H g: {HVP_HELP}"}

    def __init__(self, temperature: float = 1.0, hvp: str = "fd"):
        self.temperature = temperature
        self.hvp = check_hvp(hvp, "grasp")

    def options(self) -> dict:
        options = super().options()
        if options["hvp"] == "exact":  # scores recorded before fd existed used the double backward
            del options["hvp"]
        return options

    def score(self, model: nn.Module, batches: BatchSource, loss_fn: LossFn) -> float:
        model.train()
        weights = [m.weight for m in weight_layers(model)]
        x, y = batches.batch(0)

        def gradient(create_graph: bool = False):
            loss = loss_fn(model(x) / self.temperature, y)
            return torch.autograd.grad(loss, weights, create_graph=create_graph, allow_unused=True)

        if self.hvp == "exact":
            grads = gradient(create_graph=True)
            used = [(w, g) for w, g in zip(weights, grads) if g is not None]
            z = sum((g.detach() * g).sum() for _, g in used)
            hg = torch.autograd.grad(z, [w for w, _ in used], allow_unused=True)
            pairs = [(w, h) for (w, _), h in zip(used, hg)]
        else:
            with FrozenKinks(model) as kinks:
                with kinks.record():
                    grads = gradient()
                norm = float(sq_norm(grads))
                if norm == 0.0:
                    return 0.0
                eps = fd_step(norm)
                with shifted(model, weights, grads, eps), kinks.replay():
                    ahead = gradient()
            pairs = [(w, None if g is None else (a - g) / eps) for w, g, a in zip(weights, grads, ahead)]
        return sum(float((-w.detach() * h).double().sum()) for w, h in pairs if h is not None)


class _NoBN(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


@PREDICTORS.register("synflow")
class SynFlow(Predictor):
    """SynFlow (Tanaka et al. 2020) as in Abdelfattah et al. 2021 / NASLib: BatchNorm off,
    |theta| in float64, an all-ones input of one sample, R = sum(output); the score is
    sum over conv/linear weights of |w * dR/dw|. NASLib stores log(score): ranks are equal."""

    def requirements(self) -> Requirements:
        return Requirements(batches=0, labels=False)

    def score(self, model: nn.Module, batches: BatchSource, loss_fn: LossFn) -> float:
        net = copy.deepcopy(model)
        for parent in list(net.modules()):
            for child_name, child in parent.named_children():
                if isinstance(child, nn.modules.batchnorm._BatchNorm):
                    setattr(parent, child_name, _NoBN())
        net = net.double().train()
        with torch.no_grad():
            for p in net.parameters():
                p.abs_()
        out = net(torch.ones(1, *batches.input_shape, dtype=torch.float64, device=model_device(net)))
        weights = [m.weight for m in weight_layers(net)]
        grads = torch.autograd.grad(out.sum(), weights, allow_unused=True)
        return sum(float((w.detach() * g).abs().sum()) for w, g in zip(weights, grads) if g is not None)
