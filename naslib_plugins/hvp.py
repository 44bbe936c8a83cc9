"""Second derivatives by finite differences of gradients: NASI's search step and GraSP.

Both read a Hessian-vector product along the loss gradient g: NASI's d||g||^2/d alpha is
2 (d^2 L / d alpha d theta) g, GraSP's score is -w . H g. An exact double backward through batch
norm costs 6-13x a forward+backward on the CPU; a difference of first derivatives taken at
theta +- eps g (DARTS's second-order trick) costs 2-3 of them.

Taken naively the difference measures something else: a ReLU whose input lies within eps |dz|
of its kink switches pieces between the passes, which autograd's derivative (the slope of the
piece it is on) never sees, and in float32 that error does not shrink with eps (measured: NASI
gradient cosine to exact 0.63, GraSP Spearman -0.39). So a reference pass records every
piecewise-linear unit's piece (ReLU masks, LeakyReLU slopes, max-pool argmaxes) and the shifted
passes replay them frozen: the difference then approximates the derivative of exactly the
function autograd differentiates, to O(eps^2) (central) or O(eps) (one-sided). Smooth units
(batch norm, tanh, GELU, ...) need nothing. Kinks that live in functional code (F.relu) rather
than in modules cannot be frozen; every space of this package uses modules.
"""
from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

import torch
import torch.nn as nn
import torch.nn.functional as F

from naslib_plugins.errors import UserError

HVP_MODES = ("fd", "exact")
HVP_HELP = "second derivative by a finite difference of gradients with frozen ReLU pieces (fd) or double backward"

# kinked units that FrozenKinks has no replay for: a model holding one must use --hvp exact
_UNSUPPORTED = (nn.Hardtanh, nn.Hardswish, nn.Hardsigmoid, nn.Hardshrink, nn.Softshrink, nn.Threshold, nn.PReLU,
                nn.RReLU, nn.MaxPool1d, nn.MaxPool3d, nn.AdaptiveMaxPool1d, nn.AdaptiveMaxPool2d,
                nn.AdaptiveMaxPool3d, nn.FractionalMaxPool2d, nn.LPPool2d, nn.MaxUnpool2d)


# set while a supernet runs a candidate its weights do not choose (spaces/supernet.py, `candidate`)
_UNFROZEN: ContextVar[bool] = ContextVar("unfrozen", default=False)


@contextmanager
def unfrozen() -> Iterator[None]:
    """Within this block units run as themselves, neither recorded nor replayed: the candidates a
    NASI sample does not choose, which the pass at theta skips (they cannot change its value or g).
    Freezing their kinks as well takes a third forward of the whole supernet; left free they touch
    only their own alpha entries. The step is then within 2.7e-3 (relative, float64) of the double
    backward on 19 of 20 NB201 steps and 1.5e-2 off on one (perf/hvp_accuracy.py), while float32
    itself moves it by up to 2e-1 on deep cells."""
    token = _UNFROZEN.set(True)
    try:
        yield
    finally:
        _UNFROZEN.reset(token)


def check_hvp(mode: str, owner: str) -> str:
    if mode not in HVP_MODES:
        raise UserError(f"{owner} hvp must be one of {', '.join(HVP_MODES)}, got {mode!r}")
    return mode


def fd_step(sq_norm: float) -> float:
    """The shift eps along v = g for ||g||^2 = sq_norm: 1e-3 / max(||g||, ||g||^2). Where ||g|| is
    small, eps ||g|| = 1e-3 keeps the change of the gradient well above float32 rounding; where it
    is large (deep chain cells, ||g||^2 up to ~3e5), the third derivative along g grows about as
    ||g||^2 and the 1 / ||g||^2 cap keeps the O(eps^2) truncation error below that rounding."""
    return 1e-3 / max(math.sqrt(sq_norm), sq_norm)


def _piece(module: nn.Module, z: torch.Tensor):
    with torch.no_grad():
        if isinstance(module, nn.ReLU):
            return (z > 0).to(z.dtype)
        if isinstance(module, nn.LeakyReLU):
            s = module.negative_slope
            return (z > 0).to(z.dtype) * (1 - s) + s
        m = module
        return F.max_pool2d(z, m.kernel_size, m.stride, m.padding, m.dilation, m.ceil_mode, return_indices=True)[1]


def _replay(module: nn.Module, z: torch.Tensor, piece: torch.Tensor) -> torch.Tensor:
    if isinstance(module, nn.MaxPool2d):
        return z.flatten(2).gather(2, piece.flatten(2)).view(piece.shape)
    return z * piece


class FrozenKinks:
    """Within `with FrozenKinks(model) as kinks:`, passes under `kinks.record()` note each ReLU /
    LeakyReLU / MaxPool2d call's piece, and passes under `kinks.replay()` use those pieces, call by
    call in the same order (a module called twice per forward has two), so a replayed pass computes
    the record pass's piecewise-linear function, shifted or not. Outside both it is the model."""

    def __init__(self, model: nn.Module):
        odd = sorted({type(m).__name__ for m in model.modules() if isinstance(m, _UNSUPPORTED)})
        if odd:
            raise UserError(f"--hvp fd cannot freeze the kinks of {', '.join(odd)}; use --hvp exact")
        self.units = [m for m in model.modules() if isinstance(m, (nn.ReLU, nn.LeakyReLU, nn.MaxPool2d))]
        self.mode: str | None = None
        self.pieces: dict[nn.Module, list[torch.Tensor]] = {}
        self.cursor: dict[nn.Module, int] = {}

    def __enter__(self) -> FrozenKinks:
        # an instance attribute shadows the class's forward; in-place ReLUs are no trouble, since
        # the piece is read before the unit runs and a replayed unit does not run at all
        for m in self.units:
            m.forward = self._forward(m, m.forward)
        return self

    def __exit__(self, *exc) -> None:
        for m in self.units:
            del m.forward

    def _forward(self, module: nn.Module, original: Callable) -> Callable:
        def forward(z: torch.Tensor) -> torch.Tensor:
            if self.mode == "replay" and not _UNFROZEN.get():
                i = self.cursor.get(module, 0)
                self.cursor[module] = i + 1
                return _replay(module, z, self.pieces[module][i])
            if self.mode == "record" and not _UNFROZEN.get():
                self.pieces.setdefault(module, []).append(_piece(module, z))
            return original(z)
        return forward

    def record(self) -> contextlib.AbstractContextManager:
        self.pieces = {}
        return self._in("record")

    def replay(self) -> contextlib.AbstractContextManager:
        self.cursor = {}
        return self._in("replay")

    @contextmanager
    def _in(self, mode: str) -> Iterator[None]:
        self.mode = mode
        try:
            yield
        finally:
            self.mode = None


@contextmanager
def shifted(model: nn.Module, params: Sequence[torch.Tensor], direction: Sequence[torch.Tensor | None],
            eps: float) -> Iterator[None]:
    """params at theta + eps * direction inside the block; afterwards theta and every buffer
    (batch norm's running statistics, which the shifted passes update) as they were, bit for bit."""
    saved = [p.detach().clone() for p in params]
    buffers = [b.clone() for b in model.buffers()]
    with torch.no_grad():
        for p, d in zip(params, direction):
            if d is not None:
                p.add_(d, alpha=eps)
    try:
        yield
    finally:
        with torch.no_grad():
            for p, s in zip(params, saved):
                p.copy_(s)
            for b, s in zip(model.buffers(), buffers):
                b.copy_(s)


def sq_norm(grads: Sequence[torch.Tensor | None]) -> torch.Tensor:
    return sum((g * g).sum() for g in grads if g is not None)
