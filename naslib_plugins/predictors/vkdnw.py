"""VKDNW (Tybl & Neumann, 2025): the spread of the eigenvalues of an empirical Fisher information
matrix at a Kaiming re-initialisation, the network's number of parameter tensors ("aleph"), and the
published rank aggregates, as docs/design/rankers.md section 3 specifies them from the authors'
code (ondratybl/VKDNW, NB201/ZeroShotProxy/compute_vkdnw_score.py as it stood for the published
runs, commit 945250a, and the analysis in NB201/tss_utils.py:get_scores, commit beb332b).

`vkdnw`, on a copy of the network:
1. re-initialisation as AZ-NAS's (Kaiming normal fan-in weights, zero biases, affine norms 1/0),
   and every batch norm's running statistics reset (mean 0, variance 1): the official driver
   scores a network that has never run a forward;
2. eval mode, a N(0, 1) batch of `batch_size` inputs of the batches' input shape;
3. theta_S: the scalar at flat index 0 of each of the first 128 parameter tensors in registration
   order (`named_parameters()`; BN weights and biases count). On NB201 the tensors are taken in
   xautodl's order, whose cells register their edges by target node (0->1, 0->2, 1->2, 0->3,
   1->3, 2->3) where ours follow NASLib's edge order; elsewhere there is no reference and the
   network's own order is used;
4. J_b = d z_b / d theta_S, the K x P Jacobian of sample b's logits;
5. q_b = (1 - a) softmax(z_b) + a / K with a = 0.05 held in float16 as the official code holds it
   (so 1 - a = 0.9502 and a / K are float16 numbers and q_b sums to 1.0002 for K = 10), and L_b
   the official lower-triangular factor of diag(q_b) - q_b q_b^T: L_b = T diag(d), with
   c_j = 1 - sum_{i <= j} q_i (c_0 = 1, c_K = 0), d_j = sqrt(q_j c_j / c_{j-1}), T unit lower
   triangular with T_ij = -q_i / c_j below the diagonal;
6. F = mean over b of (L_b J_b)^T (L_b J_b), P x P, as the official code forms it. Note that
   (L J)^T (L J) = J^T L^T L J, and L^T L is not L L^T = diag(q) - q q^T: this is not
   J^T (diag q - q q^T) J (the design note's "equivalent" covariance form is not what the official
   code computes; this follows the code);
7. lambda = the singular values of F (its eigenvalues), Q = their 0.1, ..., 0.9 quantiles (linear
   interpolation), t = Q / (|Q|_1 + 1e-10), and the score is the entropy -sum t log(t + 1e-10),
   in [0, log 9]. If the SVD fails, lambda = (0, 0) and the score is 0, as officially; NaN is not
   handled (the engine records it as a failure).

The Jacobian is taken in reverse mode when K <= P, else by forward mode over the P scalars on the
whole batch, whichever needs fewer passes. In reverse mode, where every selected tensor belongs to
a Conv2d, Linear or eval-mode batch norm run once per forward, one forward and K backward passes to
those layers' outputs suffice: the derivative by a tensor's first scalar is, per sample, the
output gradient's channel 0 times the input entry that scalar multiplies (2-3x faster than
torch.func's per-sample jacrev under vmap, the official route, which any other network takes).

Supported spaces: any network whose output is per-sample class logits (B, K): nasbench201,
nasbench101, nasbench301, mlp_act_skip, and the TNB classification tasks class_object, class_scene
and jigsaw. TNB's room_layout (regression) and dense tasks have no softmax and fail with that
reason. jigsaw (K = 1000, beyond the official protocol) takes forward mode, about 128 forward
passes, and the official float16 smoothing can make its factor NaN (the 1000 smoothed
probabilities sum to 1.0002, more than the tail of the classes holds, so some c_j < 0): such a
network fails with that reason, where the official code would reach its SVD fallback and score 0.

On NB201 (K = 10 to 120, P = 128) the factor is always finite. Memory: the per-sample gradients of
the selected tensors for a chunk of classes are held at once (at most ~512 MiB; one class at a
time on the TNB encoders), plus the activations of the batch.
"""
from __future__ import annotations

import math
import re

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, jacrev, jvp, vmap

from naslib_plugins.data.batches import BatchSource
from naslib_plugins.predictors.az_nas import DEFAULT_BATCH_SIZE, _check_batch_size, kaiming_fan_in_
from naslib_plugins.predictors.base import (
    PREDICTORS,
    LossFn,
    Predictor,
    Requirements,
    SetPredictor,
    model_device,
    private_copy,
    require_input_dependent_sum,
)
from naslib_plugins.predictors.ensemble import bottom_filled, log_ranks, unrankable

FISHER_TENSORS = 128  # params_grad_len of the published runs
_SMOOTHING = 0.05  # label smoothing of the predicted distribution, held in float16 officially
_LOG_EPS = 1e-10
_DECILES = torch.arange(1, 10) / 10  # 0.1 .. 0.9 in float32: the official torch.arange(0.1, 1., 0.1)
_CLASSIFICATION_KINDS = ("classification", "jigsaw")
# per-sample gradients of the selected tensors held at once (float32 elements, 512 MiB): sets how
# many classes are differentiated together
_GRADIENT_BUDGET = 2**27


def aleph(model: nn.Module) -> int:
    """The number of parameter tensors (`len(named_parameters())`): VKDNW's "number of trainable
    layers"."""
    return len(list(model.named_parameters()))


def _xautodl_edge_rank() -> dict[int, int]:
    from naslib_plugins.spaces.nasbench201.encoding import EDGE_POS

    # xautodl's InferCell registers node j's incoming edges i -> j for j = 1, 2, 3 and i < j
    order = [EDGE_POS[(s, t)] for t in (2, 3, 4) for s in range(1, t)]
    return {pos: rank for rank, pos in enumerate(order)}


def fisher_parameter_order(model: nn.Module) -> list[tuple[str, nn.Parameter]]:
    """`named_parameters()` in the reference implementation's registration order: on NB201 each
    cell's edges in xautodl's order; otherwise as registered."""
    from naslib_plugins.spaces.nasbench201.network import Cell, NB201Skeleton

    named = list(model.named_parameters())
    if not isinstance(model, NB201Skeleton):
        return named
    rank = _xautodl_edge_rank()
    pattern = re.compile(r"^cells\.(\d+)\.edges\.(\d+)\.")

    def key(item: tuple[int, tuple[str, nn.Parameter]]) -> tuple:
        index, (name, _) = item
        m = pattern.match(name)
        if m and isinstance(model.cells[int(m[1])], Cell):
            # a cell's parameters are contiguous: order them by edge within the cell
            return (int(m[1]), rank[int(m[2])], index)
        return (-1, 0, index)

    out: list[tuple[str, nn.Parameter]] = []
    run: list[tuple[int, tuple[str, nn.Parameter]]] = []
    for item in enumerate(named):
        if pattern.match(item[1][0]):
            run.append(item)
            continue
        out += [p for _, p in sorted(run, key=key)]
        run = []
        out.append(item[1])
    out += [p for _, p in sorted(run, key=key)]
    return out


def smoothed_probabilities(logits: torch.Tensor) -> torch.Tensor:
    """(1 - a) softmax + a / K with a = 0.05 in float16, as the official code computes it (the
    float16 scalars combine with the float32 softmax into float32)."""
    a = torch.tensor(_SMOOTHING, dtype=torch.float16, device=logits.device)
    return torch.softmax(logits, dim=1) * (1 - a) + a / logits.shape[1]


def covariance_factor(q: torch.Tensor) -> torch.Tensor:
    """Per row q_b (B, K): L_b = T diag(d) with c_j = 1 - sum_{i<=j} q_i (c_0 = 1, c_K = 0),
    d_j = sqrt(q_j c_j / c_{j-1}), T unit lower triangular, T_ij = -q_i / c_j for i > j; so that
    L L^T = diag(q) - q q^T when q sums to one (Tanabe & Sagae's factor)."""
    b, k = q.shape
    c = 1 - torch.cumsum(q, dim=1)
    c[:, -1] = 0
    c_prev = torch.cat([torch.ones_like(c[:, :1]), c[:, :-1]], dim=1)
    d = torch.sqrt(q * c / c_prev)
    below = torch.tril(torch.ones(k, k, dtype=torch.bool, device=q.device), diagonal=-1)
    # column j = K - 1 (c = 0) has no entry below the diagonal, so no division by zero is kept
    safe_c = torch.where(c == 0, torch.ones_like(c), c)
    t = torch.where(below, -q[:, :, None] / safe_c[:, None, :], torch.zeros((), dtype=q.dtype, device=q.device))
    t = t + torch.eye(k, dtype=q.dtype, device=q.device)
    return t * d[:, None, :]


def reset_batch_norm_statistics(model: nn.Module) -> None:
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.track_running_stats:
            m.reset_running_stats()


def selected_parameters(model: nn.Module, n_tensors: int = FISHER_TENSORS) -> list[str]:
    return [name for name, _ in fisher_parameter_order(model)[:n_tensors]]


def logits_jacobian(model: nn.Module, x: torch.Tensor, names: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """(logits (B, K), J (B, K, P)): the eval-mode logits and their derivatives by the scalar at
    flat index 0 of each named parameter, per sample. Reverse mode (K backward passes) when
    K <= P, else forward mode (P forward passes); the model must be in eval mode, where samples do
    not interact."""
    with torch.no_grad():
        z = model(x)
    if z.dim() != 2:
        raise TypeError(f"VKDNW needs per-sample class logits (B, K); the network gives {tuple(z.shape)}")
    if z.shape[1] > len(names):
        return z, _jacobian_forward(model, x, names)
    jac = _jacobian_by_layer(model, x, names)
    return z, _jacobian_reverse(model, x, names) if jac is None else jac


def _first_entry_owners(model: nn.Module, names: list[str]) -> list[tuple[nn.Module, str]] | None:
    """(module, "weight" or "bias") owning each named tensor, or None if one is not a layer whose
    first-scalar derivative _first_entry_gradient knows."""
    owners = []
    for name in names:
        prefix, _, attr = name.rpartition(".")
        m = model.get_submodule(prefix)
        if isinstance(m, nn.Conv2d):
            supported = m.padding_mode == "zeros" and not isinstance(m.padding, str)
        elif isinstance(m, nn.modules.batchnorm._BatchNorm):
            supported = not m.training and m.running_mean is not None
        else:
            supported = isinstance(m, nn.Linear)
        if not supported or attr not in ("weight", "bias"):
            return None
        owners.append((m, attr))
    return owners


def _first_entry_gradient(m: nn.Module, attr: str, x0: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """Per sample, the derivative by m.<attr>.flatten()[0] given g, the gradient at m's output, and
    x0, channel 0 of m's input (the last feature for Linear). That scalar connects input channel 0
    to output channel 0 (group 0 of a grouped conv), at kernel offset (0, 0)."""
    if isinstance(m, nn.Linear):
        per_position = g[..., 0] if attr == "bias" else g[..., 0] * x0[..., 0]
    elif isinstance(m, nn.Conv2d):
        h, w = g.shape[2:]
        (ph, pw), (sh, sw) = m.padding, m.stride
        if attr == "bias":
            per_position = g[:, 0]
        else:
            xp = F.pad(x0[:, 0], (pw, pw, ph, ph))
            per_position = g[:, 0] * xp[:, : sh * (h - 1) + 1 : sh, : sw * (w - 1) + 1 : sw]
    else:  # eval-mode batch norm: y = (x - mean) / sqrt(var + eps) * weight + bias
        per_position = g[:, 0]
        if attr == "weight":
            per_position = per_position * (x0[:, 0] - m.running_mean[0]) / torch.sqrt(m.running_var[0] + m.eps)
    return per_position.reshape(len(per_position), -1).sum(dim=1)


def _jacobian_by_layer(model: nn.Module, x: torch.Tensor, names: list[str]) -> torch.Tensor | None:
    """J (B, K, P) from one forward and K backward passes to the owning layers' outputs (eval mode:
    sample b's logits depend on sample b alone, so the batch gradient at a layer's output is
    per sample), or None where a tensor's layer is not supported or runs more than once."""
    owners = _first_entry_owners(model, names)
    if owners is None:
        return None
    layers = list(dict.fromkeys(m for m, _ in owners))
    seen: dict[nn.Module, tuple[torch.Tensor, torch.Tensor]] = {}
    reused = []

    def keep(m: nn.Module, inputs: tuple, out: torch.Tensor) -> torch.Tensor:
        if m in seen:
            reused.append(m)
        x0 = inputs[0][..., :1] if isinstance(m, nn.Linear) else inputs[0][:, :1]
        seen[m] = (x0.detach().clone(), out)
        return out.clone()  # later in-place ops (ReLU(inplace=True)) then leave `out` as it was

    handles = [m.register_forward_hook(keep) for m in layers]
    try:
        z = model(x)
    finally:
        for h in handles:
            h.remove()
    if reused:
        return None
    ran = [m for m in layers if m in seen]
    columns = []
    for k in range(z.shape[1]):
        grads = torch.autograd.grad(z[:, k].sum(), [seen[m][1] for m in ran], retain_graph=True,
                                    allow_unused=True, materialize_grads=True) if ran else []
        at = dict(zip(ran, grads))
        columns.append(torch.stack([_first_entry_gradient(m, attr, seen[m][0], at[m]) if m in at
                                    else torch.zeros(len(x), dtype=z.dtype, device=z.device)
                                    for m, attr in owners], dim=1))
    return torch.stack(columns, dim=1).detach()


def _spliced_logits(model: nn.Module, names: list[str]):
    """(v0, f): the selected scalars' values and f(v, x), the logits with those scalars set to v
    (spliced into copies of their tensors) on inputs x."""
    params = {name: p.detach() for name, p in model.named_parameters()}
    buffers = {name: b.detach() for name, b in model.named_buffers()}
    v0 = torch.stack([params[n].reshape(-1)[0] for n in names])

    def logits(v: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        spliced = dict(params)
        for i, n in enumerate(names):
            flat = params[n].reshape(-1)
            spliced[n] = torch.cat([v[i : i + 1], flat[1:]]).view(params[n].shape)
        return functional_call(model, {**spliced, **buffers}, (x,))

    return v0, logits


def _jacobian_reverse(model: nn.Module, x: torch.Tensor, names: list[str]) -> torch.Tensor:
    """Per sample (a batch of one: eval mode), K vector-Jacobian products, as the official code
    takes them (torch.func's jacrev under vmap), as many classes at a time as keep the per-sample
    gradients of the selected tensors within `_GRADIENT_BUDGET`."""
    v0, logits = _spliced_logits(model, names)
    sizes = dict((n, p.numel()) for n, p in model.named_parameters())
    per_class = len(x) * sum(sizes[n] for n in names)
    chunk = max(1, _GRADIENT_BUDGET // max(per_class, 1))

    def one(v: torch.Tensor, xb: torch.Tensor) -> torch.Tensor:
        return logits(v, xb.unsqueeze(0)).squeeze(0)

    return vmap(jacrev(one, chunk_size=chunk), in_dims=(None, 0))(v0, x).detach()


def _jacobian_forward(model: nn.Module, x: torch.Tensor, names: list[str]) -> torch.Tensor:
    """P forward-mode products on the whole batch (eval mode: the samples do not interact)."""
    v0, logits = _spliced_logits(model, names)
    columns = []
    for i in range(len(names)):
        tangent = torch.zeros_like(v0)
        tangent[i] = 1
        columns.append(jvp(lambda v: logits(v, x), (v0,), (tangent,))[1].detach())
    return torch.stack(columns, dim=2)


def fisher_matrix(model: nn.Module, x: torch.Tensor, n_tensors: int = FISHER_TENSORS) -> torch.Tensor:
    """The official empirical Fisher F = mean_b (L_b J_b)^T (L_b J_b) (P x P) of `model` in eval mode."""
    model.eval()
    z, jac = logits_jacobian(model, x, selected_parameters(model, n_tensors))
    factor = covariance_factor(smoothed_probabilities(z))
    if not bool(torch.isfinite(factor).all()):
        # float16's 1 - 0.05 and 0.05 / K make q sum to 1 + 2e-4, more than the classes after
        # some j hold when K is large (jigsaw's 1000): c_j < 0 < c_{j-1} and d_j = sqrt(< 0)
        raise ValueError(f"VKDNW's covariance factor is NaN: the float16 label smoothing makes the {z.shape[1]} "
                         f"smoothed probabilities sum to {float(smoothed_probabilities(z).sum(1).max()):.6f}")
    lj = factor @ jac
    return (lj.transpose(1, 2) @ lj).mean(dim=0)


def decile_entropy(fisher: torch.Tensor) -> float:
    """The entropy of F's eigenvalue deciles, normalised to sum one (see the module docstring)."""
    try:
        lambdas = torch.linalg.svdvals(fisher)
    except torch.linalg.LinAlgError:  # the official fallback
        lambdas = torch.zeros(2, dtype=fisher.dtype, device=fisher.device)
    q = torch.quantile(lambdas, _DECILES.to(device=lambdas.device, dtype=lambdas.dtype))
    t = q / (float(q.abs().sum()) + _LOG_EPS)
    return float(-(t * torch.log(t + _LOG_EPS)).sum())


def check_classifier(model: nn.Module, name: str) -> None:
    kind = getattr(model, "kind", "classification")
    if kind not in _CLASSIFICATION_KINDS:
        raise TypeError(f"{name} needs class logits for its softmax Fisher; this network's task is {kind}")


@PREDICTORS.register("vkdnw")
class VKDNW(Predictor):
    """VKDNW's entropy: the entropy of the deciles of the eigenvalues of the empirical Fisher of the
    logits w.r.t. one scalar of each of the first 128 parameter tensors (Kaiming re-init, BN
    statistics reset, eval mode, Gaussian batch); in [0, log 9]."""

    def __init__(self, batch_size: int = DEFAULT_BATCH_SIZE):
        self.batch_size = _check_batch_size("vkdnw", batch_size)

    def requirements(self) -> Requirements:
        return Requirements(batches=0, labels=False, train_mode=False)

    def score(self, model: nn.Module, batches: BatchSource, loss_fn: LossFn) -> float:
        check_classifier(model, "vkdnw")
        net = private_copy(model).to(memory_format=torch.contiguous_format)  # as torch.func's vmap wants it
        kaiming_fan_in_(net)
        reset_batch_norm_statistics(net)
        x = torch.randn((self.batch_size, *batches.input_shape)).to(model_device(net))
        return decile_entropy(fisher_matrix(net, x))


@PREDICTORS.register("aleph")
class Aleph(Predictor):
    """VKDNW's aleph: the number of parameter tensors of the network (its "trainable layers"); on
    NB201 21 + 45 x (conv edges per cell)."""

    def requirements(self) -> Requirements:
        return Requirements(batches=0, labels=False, train_mode=False, weights=False)

    def score(self, model: nn.Module, batches: BatchSource, loss_fn: LossFn) -> float:
        return float(aleph(model))


@PREDICTORS.register("vkdnw_jacov")
class VKDNWJacov(Predictor):
    """jacov as VKDNW's aggregate takes it (VKDNW's compute_jacov_score.py): on a Kaiming fan-in
    re-initialised copy in train mode, the input gradients g_b of each sample's summed logits on
    batch 0; with mu the eigenvalues of their correlation matrix (float64),
    -sum(log(mu + 1e-5) + 1 / (mu + 1e-5)). `jacov` is the same formula at the model's own
    initialisation. A constant sample's Jacobian (NaN correlations) scores NaN; a network whose
    summed outputs do not depend on its input in train mode (NB301, TNB's pooled heads) fails."""

    def requirements(self) -> Requirements:
        return Requirements(labels=False)

    def score(self, model: nn.Module, batches: BatchSource, loss_fn: LossFn) -> float:
        require_input_dependent_sum(model)
        net = private_copy(model)
        kaiming_fan_in_(net)
        net.train()
        x = batches.batch(0)[0].detach().clone().requires_grad_(True)
        y = net(x)
        (g,) = torch.autograd.grad(y, x, torch.ones_like(y), allow_unused=True)
        if g is None:
            g = torch.zeros_like(x)
        corr = torch.corrcoef(g.reshape(len(g), -1).double())
        if not bool(torch.isfinite(corr).all()):
            return math.nan
        mu = torch.linalg.eigvalsh(corr)
        return float(-(torch.log(mu + 1e-5) + 1.0 / (mu + 1e-5)).sum())


# ------------------------------------------------------------------------ set level

def dense_pair_ranks(first: list[float | None], second: list[float | None]) -> np.ndarray:
    """Dense ranks (1, 2, ...) of the pairs (first, second) ordered lexicographically, ascending,
    a missing or NaN value at -inf (pandas' rank(method="dense") of the tuples)."""
    pairs = list(zip(bottom_filled(first).tolist(), bottom_filled(second).tolist()))
    levels = {pair: rank for rank, pair in enumerate(sorted(set(pairs)), start=1)}
    return np.array([levels[pair] for pair in pairs], dtype=float)


@PREDICTORS.register("vkdnw_single")
class VKDNWSingle(SetPredictor):
    """VKDNW_single as published: log of the dense rank of (aleph, vkdnw) compared
    lexicographically (aleph decides, the entropy breaks its ties), ascending (tss_utils.py
    get_scores, column vkdnw_rank). A failed entropy counts as -inf within its aleph level."""

    components = ["aleph", "vkdnw"]

    def combine(self, columns: dict[str, list[float | None]]) -> tuple[list[float | None], list[str | None]]:
        why = unrankable(columns, self.components)
        n = len(columns[self.components[0]])
        if why is not None or n == 0:
            return [None] * n, [why] * n
        return [float(v) for v in np.log(dense_pair_ranks(columns["aleph"], columns["vkdnw"]))], [None] * n


@PREDICTORS.register("vkdnw_agg")
class VKDNWAgg(SetPredictor):
    """VKDNW_agg (Table 1): log denserank(aleph, vkdnw) + log rank(az_expressivity) +
    log rank(az_trainability) + log rank(flops_conv) + log rank(vkdnw_jacov), ranks ascending with
    ties averaged and not divided by N (tss_utils.py get_scores, column vkdnw_comb_rank).
    Progressivity is not part of it. -inf, NaN or failed expressivity, trainability and FLOPs rank
    tied at the bottom; a failed jacov takes the column's smallest score, as VKDNW fills it."""

    components = ["aleph", "vkdnw", "az_expressivity", "az_trainability", "flops_conv", "vkdnw_jacov"]

    def combine(self, columns: dict[str, list[float | None]]) -> tuple[list[float | None], list[str | None]]:
        why = unrankable(columns, self.components)
        n = len(columns[self.components[0]])
        if why is not None or n == 0:
            return [None] * n, [why] * n
        total = np.log(dense_pair_ranks(columns["aleph"], columns["vkdnw"]))
        for c in ("az_expressivity", "az_trainability", "flops_conv"):
            total = total + log_ranks(bottom_filled(columns[c]), normalise=False)
        jacov = np.array([math.nan if v is None else float(v) for v in columns["vkdnw_jacov"]])
        finite = jacov[np.isfinite(jacov)]
        if not len(finite):
            return [None] * n, ["component vkdnw_jacov has no finite score"] * n
        total = total + log_ranks(np.where(np.isfinite(jacov), jacov, finite.min()), normalise=False)
        return [float(v) for v in total], [None] * n
