"""mlp_act_skip's encoding: the activations by index and the skip pairs of a depth (the space
docstring gives the layout)."""
from __future__ import annotations

ACTIVATIONS = ("relu", "leaky_relu", "tanh", "sigmoid", "gelu", "silu", "elu", "softplus")
NUM_ACTIVATIONS = len(ACTIVATIONS)

Arch = tuple[int, ...]


def skip_pairs(depth: int) -> tuple[tuple[int, int], ...]:
    """Every (source j, target l) a skip can join: l = 2..depth, j = 0..l-2, by target then source."""
    return tuple((j, t) for t in range(2, depth + 1) for j in range(t - 1))
