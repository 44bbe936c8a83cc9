"""mlp_act_skip's network: h_0 = W_0 x; h_l = sigma_l(W_l h_{l-1}) + sum of the chosen h_j;
output W_out h_L."""
from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn as nn

from naslib_plugins.spaces.mlp_act_skip.encoding import ACTIVATIONS

_MODULES = {
    "relu": nn.ReLU,
    "leaky_relu": nn.LeakyReLU,
    "tanh": nn.Tanh,
    "sigmoid": nn.Sigmoid,
    "gelu": nn.GELU,
    "silu": nn.SiLU,
    "elu": nn.ELU,
    "softplus": nn.Softplus,
}


def activation_module(index: int) -> nn.Module:
    return _MODULES[ACTIVATIONS[index]]()


class MLPActSkipNetwork(nn.Module):
    """h_0 = W_0 x; h_l = sigma_l(W_l h_{l-1}) + sum of the chosen h_j; output W_out h_L."""

    def __init__(self, activations: Sequence[int], skips: Sequence[tuple[int, int]], in_features: int,
                 width: int, num_classes: int):
        super().__init__()
        self.embed = nn.Linear(in_features, width)
        self.layers = nn.ModuleList(nn.Linear(width, width) for _ in activations)
        self.activations = nn.ModuleList(activation_module(a) for a in activations)
        self.classifier = nn.Linear(width, num_classes)
        # sources[l - 1]: the earlier states added to h_l
        self.sources = [[j for j, t in skips if t == layer] for layer in range(1, len(activations) + 1)]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        states = [self.embed(x)]
        for layer, act, sources in zip(self.layers, self.activations, self.sources):
            h = act(layer(states[-1]))
            for j in sources:
                h = h + states[j]
            states.append(h)
        return self.classifier(states[-1])
