"""Our predictors as NASLib zero-cost measures, so that `ZeroCost(method_type="zico")` works, and
with it everything NASLib builds on it: BANANAS/NPENAS `zc_names`, the zero-cost runner and its
evaluators, `find_measures`.

How NASLib calls a measure (`predictive.find_measures_arrays`): on its own copy of the network,
with the data of `num_imgs_or_batches` loader batches concatenated into one (inputs, targets)
pair, and `split_data`, its out-of-memory fallback. The value must be a list of tensors, which
`find_measures` sums; only the measures named in UNSUMMED are passed through as they are.

Predictors that read several mini-batches (ZiCo reads two) get them by cutting that data into
equal parts. How much data that is depends on `num_imgs_or_batches`, which every `ZeroCost`
starts at 1, including those NASLib builds itself (BANANAS/NPENAS `zc_names`, its runners and
evaluators); `set_batch_mode` chooses (see BATCH_MODES; default "split").
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Iterable

import torch

from naslib_plugins.data.batches import FixedBatches
from naslib_plugins.errors import UserError
from naslib_plugins.naslib_adapter._naslib import measure_registry
from naslib_plugins.predictors import PREDICTORS, Predictor, SetPredictor, get_predictor

# find_measures computes these two itself (tensorwatch's counts), before it looks at its registry
ANSWERED_BEFORE_REGISTRY = ("flops", "params")
# find_measures returns these measures' values unsummed; every other measure must give a list of tensors
UNSUMMED = ("jacov", "epe_nas", "nwot", "zen")

# how a predictor reading k > 1 mini-batches is fed inside NASLib's ZeroCost
BATCH_MODES = {
    "split": "the data of ZeroCost's loader batches (1 unless num_imgs_or_batches is set) cut into k parts",
    "loader": "one whole loader batch per mini-batch: ZeroCost objects built from then on read k loader batches",
}
# the samples NASLib's own measures see (one loader batch), and what the adapter did before there was a choice
DEFAULT_BATCH_MODE = "split"

# name -> the implementation we put into NASLib's registry, to recognise our own entries
_ours: dict[str, Callable] = {}
_batch_mode = DEFAULT_BATCH_MODE


def _is_set_predictor(name: str) -> bool:
    return issubclass(PREDICTORS.get(name), SetPredictor)


def check_per_architecture(name: str) -> None:
    if _is_set_predictor(name):
        raise UserError(f"{name!r} ranks a whole set of architectures; NASLib scores one network at a time")


def batches_read(predictor: Predictor) -> int:
    """How many mini-batches to hand a predictor: those it reads, and one at least, since
    FixedBatches gives the input shape of its first batch to those that read no data."""
    return max(1, predictor.requirements().batches)


def is_ours(name: str) -> bool:
    """Whether NASLib's registry serves `name` with our predictor."""
    current = measure_registry()._measure_impls.get(name)
    return current is not None and current is _ours.get(name)


def batch_mode() -> str:
    return _batch_mode


def set_batch_mode(mode: str) -> None:
    """How our predictors that read several mini-batches (ZiCo: two) get them inside NASLib's
    `ZeroCost`, including the ones NASLib's optimizers, runners and evaluators build; one of
    BATCH_MODES, default "split". "loader" makes each such ZeroCost built from then on draw as
    many loader batches as the predictor reads (its `num_imgs_or_batches`, which a caller may
    still set afterwards); ZeroCost objects of other measures are left as NASLib builds them."""
    global _batch_mode
    if mode not in BATCH_MODES:
        raise UserError(f"unknown batch mode {mode!r}; one of: "
                        + "; ".join(f"{k} ({v})" for k, v in BATCH_MODES.items()))
    if mode != DEFAULT_BATCH_MODE:
        _follow_batch_mode()
    _batch_mode = mode


def _follow_batch_mode() -> None:
    """Wrap NASLib's `ZeroCost.__init__` (once) to apply the batch mode: the optimizers build their
    ZeroCost objects inside their own methods, so their class is the one place every one passes."""
    from naslib.predictors import ZeroCost

    init = ZeroCost.__init__
    if getattr(init, "_follows_batch_mode", False):
        return

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        if _batch_mode == "loader" and is_ours(self.method_type):
            self.num_imgs_or_batches = batches_read(get_predictor(self.method_type))

    __init__._follows_batch_mode = True
    ZeroCost.__init__ = __init__


def _measure(name: str) -> Callable:
    def compute(net: torch.nn.Module, inputs: torch.Tensor, targets: torch.Tensor, loss_fn=None, split_data: int = 1):
        # split_data is NASLib's out-of-memory fallback: its own measures sum gradients over that
        # many slices of the same data. Ours fix their mini-batches themselves (a predictor's
        # `batches`), so the data is cut into exactly those (see BATCH_MODES for how much data)
        predictor = get_predictor(name)
        score = predictor.score(net, FixedBatches.split(inputs, targets, batches_read(predictor)), loss_fn)
        return float(score) if name in UNSUMMED else [torch.tensor(float(score), dtype=torch.float64)]

    compute.__name__ = f"naslib_plugins_{name}"
    return compute


def register(names: Iterable[str] | None = None) -> list[str]:
    """Put our predictors into NASLib's zero-cost measure registry; returns the names served by ours.

    Without names: every predictor in our registry that NASLib lacks (NASLib keeps its own
    `flops`, `params` and any measure it already has; set-level predictors such as `ensemble`
    score no single network and are left out). A name given explicitly replaces NASLib's measure
    of that name with ours. Registering a measure that is already ours does nothing."""
    measures = measure_registry()
    explicit = names is not None
    wanted = [PREDICTORS.canonical(n) for n in names] if explicit else PREDICTORS.names()
    for name in wanted:
        if is_ours(name):
            continue
        current = measures._measure_impls.get(name)
        if explicit:
            check_per_architecture(name)
            if name in ANSWERED_BEFORE_REGISTRY:
                raise UserError(f"NASLib's find_measures computes {name!r} itself before reading its registry, so "
                                f"ours cannot stand in; use naslib_plugins.naslib_adapter.PluginZeroCost({name!r})")
        elif current is not None or name in ANSWERED_BEFORE_REGISTRY or _is_set_predictor(name):
            continue
        if current is not None:
            # asked for explicitly; NASLib's `measure` refuses a name it has, so its entry goes first
            del measures._measure_impls[name]
            measures.available_measures.remove(name)
        # bn=True: NASLib hands over its copy of the network with BatchNorm on; our predictors
        # switch BatchNorm off themselves where their definition says so (SynFlow)
        measures.measure(name, bn=True)(_measure(name))
        _ours[name] = measures._measure_impls[name]
    return sorted(n for n in _ours if is_ours(n))
