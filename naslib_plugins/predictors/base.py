"""A predictor scores one untrained network; the registry maps names to predictor classes."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator

import torch
import torch.nn as nn

from naslib_plugins.data.batches import BatchSource
from naslib_plugins.registry import Registry

LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


class Predictor:
    name: str = ""
    needs_data: bool = True  # False: the score depends on the architecture and weights only

    def score(self, model: nn.Module, batches: BatchSource, loss_fn: LossFn) -> float:
        raise NotImplementedError

    def options(self) -> dict:
        return {k: v for k, v in vars(self).items() if not k.startswith("_")}


PREDICTORS: Registry[type[Predictor]] = Registry("predictor")


def weight_layers(model: nn.Module) -> Iterator[nn.Module]:
    """Conv and linear layers: the ones the pruning-at-init proxies (and NASLib) score."""
    for m in model.modules():
        if isinstance(m, (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose2d, nn.Linear)):
            yield m


_CACHE_ATTR = "_naslib_plugins_grad_cache"


@contextmanager
def shared_gradients(model: nn.Module):
    """Within this block, `batch_gradients` computes each batch's gradient once per model, so
    NASI, SNIP and ZiCo scoring one network share their forward/backward passes. The weights
    must not change inside the block (predictors that alter weights work on a copy)."""
    setattr(model, _CACHE_ATTR, {})
    try:
        yield model
    finally:
        delattr(model, _CACHE_ATTR)


def batch_gradients(
    model: nn.Module, batches: BatchSource, i: int, loss_fn: LossFn
) -> dict[nn.Parameter, torch.Tensor | None]:
    """d loss(batch i) / d theta for every parameter, the model in train mode."""
    cache = getattr(model, _CACHE_ATTR, None)
    key = (id(batches), i)
    if cache is not None and key in cache:
        return cache[key]
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    x, y = batches.batch(i)
    grads = torch.autograd.grad(loss_fn(model(x), y), params, allow_unused=True)
    out = {p: (None if g is None else g.detach()) for p, g in zip(params, grads)}
    if cache is not None:
        cache[key] = out
    return out
