"""NASLib's zero-cost measures beyond SNIP, GraSP, SynFlow and NASWOT: grad_norm, plain, l2_norm,
fisher, jacov, epe_nas and zen, computed as NASLib's `find_measures` computes them
(naslib/predictors/utils/pruners/measures/ and predictive.py).

Each runs on the network as initialised, in train mode with its batch norms, on one mini-batch,
with the space's loss. The per-layer measures are summed over the Conv2d and Linear layers, the
ones NASLib's `get_layer_metric_array` visits (so not the TNB decoders' transposed convolutions),
as its `sum_arr` sums them. Where NASLib turns a NaN or infinite score into -1e8, these return it,
and the scoring engine records the architecture as failed. jacov and epe_nas differ in one more
place: where the network declares that its summed outputs do not depend on the input in train
mode (NB301; TNB's classification, regression and jigsaw heads), their input Jacobian is zero in
exact arithmetic and they fail with that reason, where NASLib scores float32's rounding residue.

The passes are shared (naslib_plugins.predictors.base): grad_norm and plain read the loss
gradient that SNIP, NASI and ZiCo read; fisher reads the same pass's channel saliencies; jacov
and epe_nas read one input Jacobian; l2_norm needs no pass; zen runs on a copy of its own.
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn

from naslib_plugins.data.batches import BatchSource
from naslib_plugins.predictors.base import (
    PREDICTORS,
    LossFn,
    Predictor,
    Requirements,
    batch_gradients,
    channel_saliencies,
    gaussian_init,
    hooked,
    input_jacobian,
    model_device,
    private_copy,
    sum_over_layers,
)

# added to eigenvalues and correlations before their logarithm, as in NASLib's jacov and epe_nas
_EPS = 1e-5


def naslib_layers(model: nn.Module) -> list[nn.Module]:
    """The layers NASLib's per-layer measures sum over: every Conv2d and Linear."""
    return [m for m in model.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]


@PREDICTORS.register("grad_norm")
class GradNorm(Predictor):
    """Sum over layers of the Frobenius norm of d loss / d weight."""

    def score(self, model: nn.Module, batches: BatchSource, loss_fn: LossFn) -> float:
        grads = batch_gradients(model, batches, 0, loss_fn)
        return sum_over_layers(naslib_layers(model), grads, lambda w, g: g.norm())


@PREDICTORS.register("plain")
class Plain(Predictor):
    """Sum over layer weights of w * d loss / dw, signed (SNIP without the absolute value)."""

    def score(self, model: nn.Module, batches: BatchSource, loss_fn: LossFn) -> float:
        grads = batch_gradients(model, batches, 0, loss_fn)
        return sum_over_layers(naslib_layers(model), grads, lambda w, g: (w * g).double().sum())


@PREDICTORS.register("l2_norm")
class L2Norm(Predictor):
    """Sum over layers of the Frobenius norm of the weight: the initialisation alone."""

    def requirements(self) -> Requirements:
        return Requirements(batches=0, labels=False, train_mode=False)

    def score(self, model: nn.Module, batches: BatchSource, loss_fn: LossFn) -> float:
        return sum(float(m.weight.detach().norm()) for m in naslib_layers(model))


@PREDICTORS.register("fisher")
class Fisher(Predictor):
    """Fisher pruning's channel saliency (Theis et al. 2018) as NASLib sums it: per layer and
    output channel k, 0.5 * mean over samples of g_nk^2, g_nk = d loss / d (mask on channel k of
    sample n); its absolute value is broadcast over the channel's weights, so each channel counts
    once per weight of its filter (prod(weight.shape[1:]) times).

    A layer run several times in one forward (TNB jigsaw's tile encoder, shared by the nine
    tiles) adds each run's term, as NASLib's accumulating hook does: its recorded jigsaw scores
    agree with that in scale and rank. (Under PyTorch 2 that hook fails on a layer's second run,
    having deleted the activation it stored at the first.)"""

    def requirements(self) -> Requirements:
        return Requirements(saliencies=True)

    def score(self, model: nn.Module, batches: BatchSource, loss_fn: LossFn) -> float:
        saliencies = channel_saliencies(model, batches, 0, loss_fn)
        total = 0.0
        for m in naslib_layers(model):
            runs = saliencies.get(m)
            if runs:
                per_channel = sum(g.pow(2).mean(dim=0).mul(0.5) for g in runs)
                total += float(per_channel.abs().double().sum()) * m.weight[0].numel()
        return total


def _correlations(rows: torch.Tensor) -> torch.Tensor:
    """np.corrcoef of the rows in float64 (a 0-d 1, or NaN for a constant row, given one row)."""
    return torch.corrcoef(rows.double())


@PREDICTORS.register("jacov")
class JacobianCovariance(Predictor):
    """Mellor et al.'s first NASWOT score, in NASLib's variant: the eigenvalues v of the
    correlation matrix of the samples' input Jacobians (of the summed outputs) give
    -sum(log(v + 1e-5) + 1 / (v + 1e-5))."""

    def requirements(self) -> Requirements:
        return Requirements(labels=False)

    def score(self, model: nn.Module, batches: BatchSource, loss_fn: LossFn) -> float:
        corr = _correlations(input_jacobian(model, batches, 0).rows)
        if not bool(torch.isfinite(corr).all()):  # a sample with a constant Jacobian
            return math.nan
        v = torch.linalg.eigvalsh(corr)
        return float(-(torch.log(v + _EPS) + 1.0 / (v + _EPS)).sum())


def _distributions(t: torch.Tensor) -> bool:
    return bool((t >= 0).all()) and bool(torch.allclose(t.sum(dim=1), torch.ones(len(t), dtype=t.dtype), atol=1e-4))


@PREDICTORS.register("epe_nas")
class EPENAS(Predictor):
    """EPE-NAS (Lopes et al. 2021) as NASLib computes it: the samples' input Jacobians grouped by
    class; per class c, s_c = sum of log(|corr| + 1e-5) over its correlation matrix. With at most
    100 classes (the network's last output dimension) the score is sum_c |s_c|; with more, s_c is
    divided by the class's sample count, classes with a single sample are left out, and the score
    is sum over pairs |s_c - s_c'| divided by the classes kept (0 when none is). Two-dimensional
    targets count as their argmax only when each row is a distribution over classes (TNB's
    class_* labels); other targets (room_layout's regression vectors, images) have no class."""

    def score(self, model: nn.Module, batches: BatchSource, loss_fn: LossFn) -> float:
        jacobian = input_jacobian(model, batches, 0)
        labels = batches.batch(0)[1]
        if labels.dim() == 2 and _distributions(labels):
            labels = labels.argmax(dim=1)
        if labels.dim() != 1:
            raise ValueError(f"epe_nas groups samples by class; targets of shape {tuple(labels.shape)} give none")
        many_classes = jacobian.output_shape[-1] > 100
        per_class = []
        for c in torch.unique(labels):
            rows = jacobian.rows[labels == c]
            if many_classes and len(rows) == 1:
                continue
            s = torch.log(_correlations(rows).abs() + _EPS).sum()
            per_class.append(s / len(rows) if many_classes else s)
        if not per_class:
            return 0.0
        s = torch.stack(per_class)
        if many_classes:
            return float((s[:, None] - s[None, :]).abs().sum() / len(s))
        return float(s.abs().sum())


@PREDICTORS.register("zen")
class Zen(Predictor):
    """Zen-NAS (Lin et al., ICCV 2021) as NASLib computes it, on a copy: conv and linear weights
    drawn N(0, 1) and their biases 0, batch-norm scales 1 and shifts 0, running statistics as a
    new network has them; x and x' = x + 0.01 * x2 for Gaussian inputs x, x2 of batch 0's shape;
    with f the final feature map before global average pooling, both passes in train mode without
    gradients, the score is log(mean over samples of sum |f(x) - f(x')|) plus, over the
    BatchNorm2d layers, log sqrt(mean running variance) as those two passes leave it.

    The network says where f is (`feature_module()`: the module whose input it is); a network
    without one (the MLP space's) fails with a message."""

    # what `list --inputs` says: batch 0 is read for its shape alone
    reads = "Gaussian inputs of mini-batch 0's shape (its values are not read); train mode"

    def requirements(self) -> Requirements:
        return Requirements(labels=False)  # batch 0 gives the shape of the Gaussian inputs

    def score(self, model: nn.Module, batches: BatchSource, loss_fn: LossFn) -> float:
        if not hasattr(model, "feature_module"):
            raise TypeError(f"zen scores the feature map before global average pooling, and "
                            f"{type(model).__name__} has none")
        shape = batches.batch(0)[0].shape
        net = private_copy(model)
        for m in net.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.track_running_stats:
                m.reset_running_stats()  # NASLib copies a network that has never run a forward
        gaussian_init(net)
        with torch.no_grad():
            # drawn on the CPU, as the weights are: the same inputs on every device
            x = torch.randn(shape)
            mixed = (x + 0.01 * torch.randn(shape)).to(model_device(net))
            x = x.to(model_device(net))
            features: list[torch.Tensor] = []
            net.train()
            with hooked([net.feature_module()], lambda m, inputs, out: features.append(inputs[0])):
                net(x)
                net(mixed)
            diff = (features[0] - features[1]).abs().flatten(1).sum(dim=1).mean()
            # torch's log, not math's: a feature map the input does not reach gives -inf, a score
            # the engine reports as failed, where math.log would raise
            score = torch.log(diff.double())
            for m in net.modules():
                if isinstance(m, nn.BatchNorm2d):
                    score += torch.log(torch.sqrt(m.running_var.double().mean()))
        return float(score)
