"""mlp_act_skip's supernet, for NASI: every activation on every layer and every skip pair."""
from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn as nn

from naslib_plugins.data.datasets import dataset_info
from naslib_plugins.spaces.base import SearchSpace
from naslib_plugins.spaces.mlp_act_skip.encoding import NUM_ACTIVATIONS
from naslib_plugins.spaces.mlp_act_skip.network import activation_module
from naslib_plugins.spaces.supernet import Supernet, candidate


class MLPActSkipSupernet(Supernet):
    """mlp_act_skip's network (as network.MLPActSkipNetwork, with the same parameter names)
    with every activation on every layer and every skip pair: one categorical over the 8
    activations per layer, then one over (off, on) per skip pair in the space's pair order.
    An "off" skip adds nothing, as NB201's `none` edge. Every candidate shares the layer's
    weights, so every sub-network has all the parameters."""

    def __init__(self, space: SearchSpace, dataset: str):
        super().__init__()
        info = dataset_info(dataset)
        self.depth = space.depth
        self.pairs = space.pairs
        self.groups = (NUM_ACTIVATIONS,) * space.depth + (2,) * len(space.pairs)
        self.embed = nn.Linear(info.features, space.width)
        self.layers = nn.ModuleList(nn.Linear(space.width, space.width) for _ in range(space.depth))
        self.activations = nn.ModuleList(activation_module(a) for a in range(NUM_ACTIVATIONS))
        self.classifier = nn.Linear(space.width, info.num_classes)

    def forward(self, x: torch.Tensor, weights: Sequence[torch.Tensor]) -> torch.Tensor:
        choice = self.choice_of(weights)
        states = [self.embed(x)]
        for n, layer in enumerate(self.layers, start=1):
            z, w = layer(states[-1]), weights[n - 1]
            if w.requires_grad:
                h = sum(w[a] * candidate(act, z, a == choice[n - 1]) for a, act in enumerate(self.activations))
            else:
                h = self.activations[choice[n - 1]](z)
            for pos, (j, target) in enumerate(self.pairs, start=self.depth):
                if target != n:
                    continue
                if weights[pos].requires_grad:
                    h = h + weights[pos][1] * states[j]
                elif choice[pos]:
                    h = h + states[j]
            states.append(h)
        return self.classifier(states[-1])

    def parameters_of(self, choice: Sequence[int]) -> list[nn.Parameter]:
        return list(self.parameters())

    def decode(self, alpha: Sequence[torch.Tensor]) -> tuple[int, ...]:
        return tuple(int(a.argmax()) for a in alpha)  # ties: the first activation, skip off
