"""A predictor scores one untrained network, a set predictor a whole set of them; the registry maps
names to both kinds of class."""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
import torch.nn as nn

from naslib_plugins.data.batches import BatchSource
from naslib_plugins.params import get_params
from naslib_plugins.registry import Registry

LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class Requirements:
    """What a predictor's score reads, as NASLib's `get_data_reqs` declares a predictor's needs."""

    batches: int = 1  # mini-batches whose samples it reads: batch(0) .. batch(batches - 1)
    labels: bool = True  # whether the targets (through the loss) enter the score
    train_mode: bool = True  # runs the network in train mode (BatchNorm on batch statistics); else eval or not at all

    @property
    def data(self) -> bool:
        """False: only the input shape is read; the score depends on the architecture and weights."""
        return self.batches > 0


class Predictor(ABC):
    """Scores one untrained network. Every constructor parameter is kept under its own name, so
    `options()` reads them back."""

    @abstractmethod
    def score(self, model: nn.Module, batches: BatchSource, loss_fn: LossFn) -> float:
        """The score of `model` as it is initialised."""

    def requirements(self) -> Requirements:
        """What `score` reads; the default is one batch with its labels, in train mode."""
        return Requirements()

    def options(self) -> dict:
        return get_params(self)


class SetPredictor(ABC):
    """Scores a whole set of architectures at once, from the scores its per-architecture
    `components` give each of them (so it scores no single network)."""

    components: list[str]

    @abstractmethod
    def combine(self, columns: dict[str, list[float | None]]) -> tuple[list[float | None], list[str | None]]:
        """Per architecture its score and, where it has none, why; `columns` maps each component
        to its scores of the set, in one order."""

    def options(self) -> dict:
        return get_params(self)


PREDICTORS: Registry[type[Predictor] | type[SetPredictor]] = Registry("predictor")


def model_device(model: nn.Module) -> torch.device:
    """The device of a model's parameters (the CPU for a model without any)."""
    return next((p.device for p in model.parameters()), torch.device("cpu"))


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
