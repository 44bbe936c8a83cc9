"""NASWOT (Mellor et al., ICML 2021): how differently an untrained network's rectifiers split the
samples of one mini-batch.

Each sample gets a binary code, one bit per unit entering a rectifier (its pre-activation > 0);
K[i, j] counts the bits in which samples i and j agree (N_A minus their Hamming distance, summed
over every rectifier); the score is log|det K|. As in the authors' code and NASLib's, the codes
are read at the inputs of the ReLU modules, with the network in train mode. `nwot_eval` reads
them in eval mode, as Zero-Cost-PT's code does both on its supernet and when it validates its
candidates: at initialisation the batch norms then apply their running statistics (0 and 1), so
they do not normalise, and the codes differ.

The score is -inf in exactly two cases, each reported as a failure naming it: the network's output
does not depend on its input (an NB201 cell with no path from input to output: whatever codes the
cut-off edges still produce, the network separates no samples), or two samples share every code
(K singular). Before this rule a cut-off cell scored a finite, low log-determinant whenever one of
its dead-end edges held a convolution, and -inf otherwise.

For spaces whose activations are not ReLU (`mlp_act_skip`), the sign pattern at the input of
every elementwise activation module plays the same role: it is the linear-region code of the
piecewise-linear ones, and of a smooth one's linear approximation around 0.
"""
from __future__ import annotations

import torch
import torch.nn as nn

from naslib_plugins.data.batches import BatchSource
from naslib_plugins.predictors.base import PREDICTORS, LossFn, Predictor, Requirements, hooked, private_copy

ACTIVATIONS = (nn.ReLU, nn.ReLU6, nn.LeakyReLU, nn.ELU, nn.GELU, nn.SiLU, nn.Softplus, nn.Tanh, nn.Sigmoid)


@PREDICTORS.register("nwot")
class NWOT(Predictor):
    train_mode = True

    def requirements(self) -> Requirements:
        return Requirements(labels=False, train_mode=self.train_mode)

    def score(self, model: nn.Module, batches: BatchSource, loss_fn: LossFn) -> float:
        if not self.train_mode:
            # eval mode reads the batch norms' running statistics, which every earlier train-mode
            # pass of another predictor moves: a copy at its initial statistics (0 and 1) scores
            # the same in any predictor order
            model = private_copy(model)
            for m in model.modules():
                if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.track_running_stats:
                    m.reset_running_stats()
        x, _ = batches.batch(0)
        n = x.shape[0]
        kernel = torch.zeros(n, n, dtype=torch.float64, device=x.device)
        units = 0

        def hook(module: nn.Module, inputs: tuple) -> None:
            nonlocal kernel, units
            # a pre-hook sees the input before an in-place activation overwrites it
            code = (inputs[0].detach().reshape(n, -1) > 0).float()
            # agreements c c^T + (1-c)(1-c)^T = 2 c c^T - s_i - s_j + units, s = ones per sample;
            # one float32 matmul of 0/1 entries is exact while a layer has < 2^24 units
            ones = code.sum(dim=1, dtype=torch.float64)
            kernel += 2.0 * (code @ code.T).double() - ones[:, None] - ones[None, :] + code.shape[1]
            units += code.shape[1]

        model.train(self.train_mode)
        with hooked([m for m in model.modules() if isinstance(m, ACTIVATIONS)], hook, pre=True), torch.no_grad():
            out = model(x)
        if units == 0:
            raise ValueError("nwot: the network has no activation module to read codes from")
        if n > 1 and isinstance(out, torch.Tensor) and bool((out == out[:1]).all()):
            raise FloatingPointError("nwot is -inf: the network's output does not depend on its input")
        sign, logdet = torch.linalg.slogdet(kernel)
        if sign <= 0:
            raise FloatingPointError("nwot is -inf: two samples share every activation code (K is singular)")
        return float(logdet)


@PREDICTORS.register("nwot_eval")
class NWOTEval(NWOT):
    train_mode = False
