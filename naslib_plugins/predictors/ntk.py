"""The smallest eigenvalue of the empirical neural tangent kernel at initialisation, the quantity
Zhu, Liu, Chrysos & Cevher (NeurIPS 2022) bound for MLPs and residual networks with searched
activations and skip connections, and rank architectures by without training."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
import torch.nn as nn
from torch.func import functional_call, jacrev

from naslib_plugins.data.batches import BatchSource
from naslib_plugins.errors import UserError
from naslib_plugins.predictors.base import PREDICTORS, LossFn, Predictor, Requirements

REDUCTIONS = ("sum", "full")
# entries of one parameter chunk's Jacobian (float32): bounds memory on the large cell networks
MAX_JACOBIAN_ELEMENTS = 2**25


@contextmanager
def batch_statistics_only(model: nn.Module) -> Iterator[None]:
    """Train-mode BatchNorm normalises with the batch statistics and also writes its running
    buffers in place; inside torch.func transforms that write of a transformed tensor into a
    captured buffer is an error. With running stats off, BatchNorm in train mode computes the
    same outputs and writes nothing, so the model's buffers are left as they were."""
    norms = [m for m in model.modules()
             if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.track_running_stats]
    for m in norms:
        m.track_running_stats = False
    try:
        yield
    finally:
        for m in norms:
            m.track_running_stats = True


def parameter_chunks(params: dict[str, torch.Tensor], rows: int) -> list[list[str]]:
    """Consecutive parameter names whose Jacobian (rows x their size) fits MAX_JACOBIAN_ELEMENTS;
    a parameter larger than that gets a chunk of its own."""
    chunks: list[list[str]] = []
    size = 0
    for name, p in params.items():
        if not chunks or (size + p.numel()) * rows > MAX_JACOBIAN_ELEMENTS:
            chunks.append([])
            size = 0
        chunks[-1].append(name)
        size += p.numel()
    return chunks


def batch_sum_bound(kernel: torch.Tensor, samples: int) -> float:
    """The smallest Rayleigh quotient of the kernel along a batch-sum direction (all samples' rows
    of one output unit): an upper bound of lambda_min. Where the network's outputs summed over the
    batch move with no weight but the head's biases and a few batch-norm shifts (`fixed_output_sum`,
    in train mode), J^T u is little more than the bias gradient, n per unit, and the bound is about
    n x units for reduction sum, n for full: on the small NB301 cells of tests/test_ntk.py lambda_min
    equals it to 1e-8, and 4 of the 6 NB301 cells of tests/reference/reference.json sit at n x 10
    (the other two a little above, a batch-norm shift through a skip). On TNB's cells, with batch
    norms along the residual paths, the bound lies above lambda_min."""
    units = kernel.shape[0] // samples
    # rows run sample-major, so unit k's rows are k, k + units, ...: u^T K u for every unit at once
    per_unit = kernel.reshape(samples, units, samples, units).diagonal(dim1=1, dim2=3).sum((0, 1))
    return float(per_unit.min()) / samples


def kernel_route(model: nn.Module) -> str:
    """The faster route to the kernel on the CPU (NTKLambdaMin.kernel): by row for a network
    with convolutions, vmapped otherwise."""
    return "by_row" if any(isinstance(m, nn.Conv2d) for m in model.modules()) else "vmapped"


def _jacobians_by_row(out: torch.Tensor, params: dict[str, torch.Tensor]) -> Iterator[torch.Tensor]:
    """J's columns of each parameter that reaches the output, (rows, its size), from one backward
    per row of `out` (none where no parameter reaches it, e.g. an NB201 cell of `none` edges)."""
    rows = out.numel()
    if not out.requires_grad:
        return
    for names in parameter_chunks(params, rows):
        chunk = [params[name] for name in names]
        grads = [torch.autograd.grad(out[i], chunk, retain_graph=True, allow_unused=True) for i in range(rows)]
        for k in range(len(chunk)):
            if grads[0][k] is not None:  # None: a parameter that does not reach the output, zero columns
                yield torch.stack([g[k].reshape(-1) for g in grads])


def _jacobians_vmapped(model: nn.Module, x: torch.Tensor, rows_of, params: dict[str, torch.Tensor],
                       rows: int) -> Iterator[torch.Tensor]:
    """Every parameter's columns from torch.func's jacrev, one chunk of parameters at a time."""
    fixed = {name: p.detach() for name, p in params.items()}
    for names in parameter_chunks(fixed, rows):
        def outputs(chunk: dict[str, torch.Tensor]) -> torch.Tensor:
            return rows_of(functional_call(model, {**fixed, **chunk}, (x,)))

        for jac in jacrev(outputs)({name: fixed[name] for name in names}).values():
            yield jac.reshape(rows, -1)


@PREDICTORS.register("ntk_lambda_min")
class NTKLambdaMin(Predictor):
    """lambda_min of K = J J^T, J the Jacobian of the network's outputs on the first `samples`
    samples of batch 0 (the whole batch when it is smaller) w.r.t. every trainable parameter,
    at the random initialisation, in train mode (BatchNorm uses the statistics of these samples,
    as the other predictors' batches do). K is accumulated in float64 over parameter chunks and
    its eigenvalues come from a symmetric solver; labels and the loss are not used.

    reduction "sum" (default): each sample's output is reduced to one scalar, f(x) = sum over
    the output units, giving an n x n kernel. The bounds of Zhu et al. are stated for
    scalar-output networks and TE-NAS builds its NTK from the gradient of the summed logits, so
    this follows both. "full": every output unit is a row of J, an (n*c) x (n*c) kernel whose
    lambda_min also sees how the class outputs' tangent features differ (c times more work).
    Outputs of any shape count as c = their size per sample. A non-finite kernel scores NaN.
    Where a network's batch-summed outputs are fixed in train mode (`fixed_output_sum`) and
    lambda_min is attained along the batch-sum direction (`batch_sum_bound`), the score is set by
    the head, and a note says so: NB301's cells sit at n x classes (see `batch_sum_bound`)."""

    def __init__(self, samples: int = 16, reduction: str = "sum"):
        if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
            raise UserError(f"ntk_lambda_min samples must be a positive integer, got {samples!r}")
        if reduction not in REDUCTIONS:
            raise UserError(f"unknown ntk_lambda_min reduction {reduction!r}; known: {', '.join(REDUCTIONS)}")
        self.samples = samples
        self.reduction = reduction

    def requirements(self) -> Requirements:
        return Requirements(labels=False)

    def _rows(self, out: torch.Tensor) -> torch.Tensor:
        if self.reduction == "sum":
            return out.reshape(out.shape[0], -1).sum(dim=1)
        return out.reshape(-1)

    def kernel(self, model: nn.Module, x: torch.Tensor, route: str | None = None) -> torch.Tensor:
        """The empirical NTK on inputs x (float64), for the reduction, accumulated over parameter
        chunks. `route` (None: by the network) takes each chunk's Jacobian "by_row", one backward
        per output row after one forward, or "vmapped", torch.func's jacrev (a batched backward).
        On the CPU a convolution network's vmapped backward costs several plain ones per row, so
        the rows win there (1.5-3.1x on the cell spaces); an MLP's backward is so small that the
        engine's per-call overhead dominates, and the vmapped route is twice as fast
        (perf/bench_ntk.py). Both give the same kernel up to float32 rounding."""
        route = route or kernel_route(model)
        if route not in ("by_row", "vmapped"):
            raise ValueError(f"unknown NTK route {route!r}")
        model.train()
        params = {name: p for name, p in model.named_parameters() if p.requires_grad}
        with batch_statistics_only(model):
            with torch.enable_grad() if route == "by_row" else torch.no_grad():
                out = self._rows(model(x))
            rows = out.numel()
            kernel = torch.zeros(rows, rows, dtype=torch.float64, device=x.device)
            blocks = (_jacobians_by_row(out, params) if route == "by_row"
                      else _jacobians_vmapped(model, x, self._rows, params, rows))
            for jac in blocks:
                jac = jac.double()
                kernel += jac @ jac.T
        return kernel

    def score(self, model: nn.Module, batches: BatchSource, loss_fn: LossFn) -> float:
        self.note = None
        x = batches.batch(0)[0][: self.samples]
        kernel = self.kernel(model, x)
        if not torch.isfinite(kernel).all():
            return float("nan")  # the eigensolver would fail to converge on it
        value = float(torch.linalg.eigvalsh(kernel)[0])
        if getattr(model, "fixed_output_sum", False) and value >= batch_sum_bound(kernel, len(x)) * (1 - 1e-6):
            self.note = ("lambda_min is the batch-sum direction's Rayleigh quotient: in train mode the summed outputs "
                         "move only with the head's biases and batch-norm shifts, so the head, not the cells, sets it")
        return value
