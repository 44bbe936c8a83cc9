"""Size baselines: parameters and FLOPs, in millions like NASLib's `params`/`flops` scores."""
from __future__ import annotations

import torch
import torch.nn as nn

from naslib_plugins.data.batches import BatchSource
from naslib_plugins.predictors.base import PREDICTORS, LossFn, Predictor, Requirements, hooked, model_device


@PREDICTORS.register("params")
class Params(Predictor):
    def requirements(self) -> Requirements:
        return Requirements(batches=0, labels=False, train_mode=False, weights=False)

    def score(self, model: nn.Module, batches: BatchSource, loss_fn: LossFn) -> float:
        return sum(p.numel() for p in model.parameters()) / 1e6


def count_flops(model: nn.Module, x: torch.Tensor) -> int:
    """FLOPs as tensorwatch's ModelStats (what NASLib records) counts them on input x:
    multiply-accumulates of conv and linear layers, one op per element of (leaky) ReLU, two per
    element of affine BatchNorm, one per window element of pooling."""
    total = 0

    def hook(module: nn.Module, inputs, output) -> None:
        nonlocal total
        inp = inputs[0]
        if isinstance(module, nn.Conv2d):
            kh, kw = module.kernel_size
            per_position = kh * kw * (module.in_channels // module.groups) * module.out_channels
            total += per_position * output.shape[0] * output.shape[2] * output.shape[3]
            if module.bias is not None:
                total += output.numel()
        elif isinstance(module, nn.Linear):
            total += inp.shape[0] * module.in_features * module.out_features
        elif isinstance(module, nn.modules.batchnorm._BatchNorm):
            total += inp.numel() * (2 if module.affine else 1)
        elif isinstance(module, (nn.AvgPool2d, nn.MaxPool2d)):
            k = module.kernel_size
            kh, kw = (k, k) if isinstance(k, int) else k
            total += output.numel() * kh * kw
        elif isinstance(module, nn.AdaptiveAvgPool2d):
            # (window + 1)^2 per output: inferred from NASLib's recorded NB201 flops, which it
            # matches for every architecture and all three datasets
            kh, kw = inp.shape[2] // output.shape[2], inp.shape[3] // output.shape[3]
            total += output.numel() * (kh + 1) * (kw + 1)
        elif isinstance(module, (nn.ReLU, nn.LeakyReLU)):
            total += inp.numel()

    with hooked([m for m in model.modules() if not list(m.children())], hook), torch.no_grad():
        model(x)
    return total


@PREDICTORS.register("flops")
class Flops(Predictor):
    """FLOPs in millions of one input in eval mode, as `count` counts them (tensorwatch's count,
    NASLib's `flops`)."""

    count = staticmethod(count_flops)

    def requirements(self) -> Requirements:
        return Requirements(batches=0, labels=False, train_mode=False, weights=False)

    def score(self, model: nn.Module, batches: BatchSource, loss_fn: LossFn) -> float:
        was_training = model.training
        model.eval()
        try:
            return self.count(model, torch.zeros(1, *batches.input_shape, device=model_device(model))) / 1e6
        finally:
            model.train(was_training)
