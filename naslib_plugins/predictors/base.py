"""A predictor scores one untrained network, a set predictor a whole set of them; the registry maps
names to both kinds of class."""
from __future__ import annotations

import copy
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import NamedTuple

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
    weights: bool = True  # whether the initial weights enter the score (not for counts of the architecture)
    saliencies: bool = False  # reads the loss pass's per-channel saliencies (`channel_saliencies`)

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

    @property
    def base_components(self) -> list[str]:
        """The per-architecture predictors whose scores `combine` reads (its columns' keys)."""
        return list(self.components)

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


def sum_over_layers(layers, grads: dict, term: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> float:
    """Sum over `layers` of term(weight, its loss gradient), skipping weights the loss does not
    reach: the shape of every per-layer gradient proxy (SNIP, plain, grad_norm)."""
    total = 0.0
    for m in layers:
        g = grads.get(m.weight)
        if g is not None:
            total += float(term(m.weight.detach(), g))
    return total


_CACHE_ATTR = "_naslib_plugins_grad_cache"
_PASSES, _READER = "passes", "reader"  # the cache's {key: [seconds, readers]} of its passes; who asks now
_SEED = "seed"  # the engine's seed of this architecture, for passes several predictors share
_SALIENCIES = "saliencies"  # whether every loss pass records the channel saliencies


@contextmanager
def shared_gradients(model: nn.Module, seed: int | None = None, saliencies: bool = False):
    """Within this block, `batch_gradients`, `channel_saliencies` and `input_jacobian` compute each
    batch's pass once per model, so the predictors scoring one network share their forward and
    backward passes. The weights must not change inside the block (predictors that alter weights
    work on a `private_copy`). `seed`: the architecture's seed, which a shared pass that draws
    random numbers reads (`shared_seed`) whichever predictor asks first. `saliencies`: a predictor
    of the block will read them, so the loss pass records them whoever asks first."""
    setattr(model, _CACHE_ATTR, {_PASSES: {}, _READER: None, _SEED: seed, _SALIENCIES: saliencies})
    try:
        yield model
    finally:
        delattr(model, _CACHE_ATTR)


def read_as(model: nn.Module, name: str) -> None:
    """Within the shared block, the passes asked for from now on are read by predictor `name`."""
    cache = getattr(model, _CACHE_ATTR, None)
    if cache is not None:
        cache[_READER] = name


def shared_seed(model: nn.Module) -> int | None:
    """The seed the engine gave this architecture's shared block; None outside one."""
    return getattr(model, _CACHE_ATTR, {}).get(_SEED)


def pass_times(model: nn.Module) -> list[tuple[float, frozenset]]:
    """Each pass of the shared block so far: (its seconds, the predictors that read it), so that
    a pass one predictor alone read is its own time and one several read is counted once."""
    cache = getattr(model, _CACHE_ATTR, {})
    return [(seconds, frozenset(readers)) for seconds, readers in cache.get(_PASSES, {}).values()]


@contextmanager
def _timed(cache: dict | None, key: Hashable, x: torch.Tensor) -> Iterator[None]:
    """Adds the block's seconds (after the device's queued work) to pass `key`'s, read by the
    current reader."""
    start = time.perf_counter()
    yield
    if cache is not None:
        if x.is_cuda:
            torch.cuda.synchronize(x.device)
        entry = cache[_PASSES].setdefault(key, [0.0, set()])
        entry[0] += time.perf_counter() - start
        entry[1].add(cache[_READER])


def _note_read(cache: dict | None, key: Hashable) -> None:
    if cache is not None and key in cache[_PASSES]:
        cache[_PASSES][key][1].add(cache[_READER])


@contextmanager
def hooked(modules: Iterable[nn.Module], hook: Callable, pre: bool = False) -> Iterator[None]:
    """`hook` on the forward of each module (pre=True: before it, seeing the input) for the
    duration of the block, removed even when the block raises: a hook left behind would run in
    every later pass of a network the caller goes on using."""
    handles = [m.register_forward_pre_hook(hook) if pre else m.register_forward_hook(hook) for m in modules]
    try:
        yield
    finally:
        for h in handles:
            h.remove()


def gaussian_init(model: nn.Module) -> None:
    """Conv2d and Linear weights N(0, 1) and biases 0, BatchNorm2d and GroupNorm weights 1 and
    biases 0 (SWAP's and Zen-NAS's re-initialisation). The draws are made on the CPU, so they are
    the same on every device, in module order."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                m.weight.copy_(torch.randn(m.weight.shape, dtype=m.weight.dtype))
                if m.bias is not None:
                    m.bias.zero_()
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)) and m.weight is not None:
                m.weight.fill_(1.0)
                m.bias.zero_()


def private_copy(model: nn.Module) -> nn.Module:
    """A deep copy of `model` to change, without the shared cache: that holds the original's
    tensors, and the copy's passes differ from the original's."""
    cache = getattr(model, _CACHE_ATTR, None)
    return copy.deepcopy(model, {} if cache is None else {id(cache): None})


@dataclass
class _LossPass:
    grads: dict[nn.Parameter, torch.Tensor | None]
    saliencies: dict[nn.Module, list[torch.Tensor]] | None  # None: the pass did not record them


def batch_gradients(
    model: nn.Module, batches: BatchSource, i: int, loss_fn: LossFn
) -> dict[nn.Parameter, torch.Tensor | None]:
    """d loss(batch i) / d theta for every parameter, the model in train mode."""
    return _loss_pass(model, batches, i, loss_fn, saliencies=False).grads


def channel_saliencies(
    model: nn.Module, batches: BatchSource, i: int, loss_fn: LossFn
) -> dict[nn.Module, list[torch.Tensor]]:
    """For each conv/linear layer, one (samples, output channels) matrix per run of the layer in
    the forward of batch i: the output times d loss / d output, summed over the positions past
    the channel axis, i.e. the derivative of the loss by a per-sample mask on each output channel.

    The same pass as `batch_gradients`: the shared pass records these when this asks for batch i
    first, or when the block was opened with `saliencies=True`; otherwise, the gradients being
    already there, it takes a pass of its own. Recording them on every pass (a hook per layer)
    would cost the predictors that do not read them ~5% of an NB201 pass on the CPU."""
    return _loss_pass(model, batches, i, loss_fn, saliencies=True).saliencies


def _loss_pass(model: nn.Module, batches: BatchSource, i: int, loss_fn: LossFn, saliencies: bool) -> _LossPass:
    cache = getattr(model, _CACHE_ATTR, None)
    key = ("loss", id(batches), i)
    cached = None if cache is None else cache.get(key)
    if cached is not None and (cached.saliencies is not None or not saliencies):
        _note_read(cache, key)
        return cached
    saliencies = saliencies or (cache is not None and cache[_SALIENCIES])
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    x, y = batches.batch(i)
    recorded: dict[nn.Module, list[torch.Tensor]] = {}
    layers = weight_layers(model) if saliencies else ()
    with hooked(layers, partial(_record_saliency, recorded)), _timed(cache, key, x):
        grads = torch.autograd.grad(loss_fn(model(x), y), params, allow_unused=True)
    out = _LossPass({p: (None if g is None else g.detach()) for p, g in zip(params, grads)},
                    recorded if saliencies else None)
    if cache is not None:
        cache[key] = out
    return out


def _record_saliency(recorded: dict[nn.Module, list[torch.Tensor]], module: nn.Module, inputs: tuple,
                     output: torch.Tensor) -> None:
    if not output.requires_grad:
        return
    # the output is held until its gradient arrives, then let go: the hook stays attached to it
    held = [output.detach()]

    def on_grad(grad: torch.Tensor) -> None:
        product = held.pop() * grad
        if product.dim() > 2:
            product = product.sum(dim=tuple(range(2, product.dim())))
        recorded.setdefault(module, []).append(product)

    output.register_hook(on_grad)


class InputJacobian(NamedTuple):
    rows: torch.Tensor  # (samples, inputs per sample): d sum(output) / d input, one row per sample
    output_shape: torch.Size


def require_input_dependent_sum(model: nn.Module) -> None:
    """Raise where the network declares (`fixed_output_sum`) that in train mode its outputs,
    summed over the batch, are the same for every input: the gradient of that sum by the input,
    which jacov, epe_nas and VKDNW's jacov read, is then exactly zero, and what float32 returns
    for it is rounding noise that differs between CPUs, not a property of the architecture."""
    if getattr(model, "fixed_output_sum", False):
        raise ValueError(f"in train mode the summed outputs of {type(model).__name__} do not depend on its input "
                         "(every path to its pooled linear head ends in a batch norm, whose output sums to a "
                         "constant over batch and positions), so their input Jacobian is zero: nothing to score")


def input_jacobian(model: nn.Module, batches: BatchSource, i: int) -> InputJacobian:
    """The gradient of the sum of the network's outputs on batch i by its inputs, the model in
    train mode, as NASLib's jacov and epe_nas take it (`y.backward(ones_like(y))`, then `x.grad`);
    refused where that gradient is zero whatever the input (`require_input_dependent_sum`)."""
    require_input_dependent_sum(model)
    cache = getattr(model, _CACHE_ATTR, None)
    key = ("jacobian", id(batches), i)
    if cache is not None and key in cache:
        _note_read(cache, key)
        return cache[key]
    model.train()
    x = batches.batch(i)[0].detach().requires_grad_(True)
    with _timed(cache, key, x):
        y = model(x)
        (grad,) = torch.autograd.grad(y, x, torch.ones_like(y), allow_unused=True)
    if grad is None:  # an output the input does not reach (NB201's all-`none` cell)
        grad = torch.zeros_like(x)
    out = InputJacobian(grad.reshape(len(grad), -1), y.shape)
    if cache is not None:
        cache[key] = out
    return out
