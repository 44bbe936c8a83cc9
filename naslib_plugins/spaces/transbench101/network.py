"""TransNAS-Bench-101's networks in plain PyTorch: the benchmark's encoder (micro cells or macro
residual blocks) and its task-specific decoders. Structure and widths follow TNB's code as NASLib
ships it (naslib/search_spaces/transbench101/tnb101/models/): net_infer/net_macro.py (encoder),
net_infer/cell_micro.py (cells), net_ops/cell_ops.py (ops), decoder.py (heads)."""
from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn as nn

from naslib_plugins.data.tasks import DENSE_KINDS, NUM_TILES, task_info
from naslib_plugins.errors import ArchitectureError, UserError
from naslib_plugins.spaces.transbench101.encoding import BASE_CHANNELS, CONV1, MICRO_EDGES, NONE, SKIP, Arch


class ReLUConvBN(nn.Sequential):
    def __init__(self, c_in: int, c_out: int, kernel: int, stride: int):
        super().__init__(
            nn.ReLU(inplace=False),
            nn.Conv2d(c_in, c_out, kernel, stride=stride, padding=kernel // 2, bias=False),
            nn.BatchNorm2d(c_out),
        )


class FactorizedReduce(nn.Module):
    """TNB's skip when the shape changes: ReLU, two stride-s 1x1 convs (the second on the
    input shifted by one pixel) concatenated, BN."""

    def __init__(self, c_in: int, c_out: int, stride: int):
        super().__init__()
        self.relu = nn.ReLU(inplace=False)
        self.conv_a = nn.Conv2d(c_in, c_out // 2, 1, stride=stride, bias=False)
        self.conv_b = nn.Conv2d(c_in, c_out - c_out // 2, 1, stride=stride, bias=False)
        self.bn = nn.BatchNorm2d(c_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.relu(x)
        # TNB pads right/bottom by one, then drops the first row/column: a one-pixel shift
        shifted = nn.functional.pad(x[:, :, 1:, 1:], (0, 1, 0, 1))
        return self.bn(torch.cat([self.conv_a(x), self.conv_b(shifted)], dim=1))


class MicroCell(nn.Module):
    """Node j = sum over i < j of op_ij(node i); the output is node 3. `none` edges add zeros,
    so they are left out of the sum (they have no parameters)."""

    def __init__(self, arch: Arch, c_in: int, c_out: int, stride: int):
        super().__init__()
        self.c_out, self.stride = c_out, stride
        edges: dict[str, nn.Module] = {}
        self._inputs: list[list[tuple[str, int]]] = [[] for _ in range(4)]
        for (src, dst), op in zip(MICRO_EDGES, arch):
            if op == NONE:
                continue
            # edges leaving the cell input change width and resolution; the others do not
            ci, s = (c_in, stride) if src == 0 else (c_out, 1)
            if op == SKIP:
                module = nn.Identity() if (ci == c_out and s == 1) else FactorizedReduce(ci, c_out, s)
            else:
                module = ReLUConvBN(ci, c_out, 1 if op == CONV1 else 3, s)
            key = f"e{src}{dst}"
            edges[key] = module
            self._inputs[dst].append((key, src))
        self.edges = nn.ModuleDict(edges)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        nodes = [x]
        for dst in (1, 2, 3):
            out = None
            for key, src in self._inputs[dst]:
                y = self.edges[key](nodes[src])
                out = y if out is None else out + y
            if out is None:
                # TNB's Zero op: zeros at the output width and (ceil) strided resolution
                b, _, h, w = x.shape
                out = x.new_zeros(b, self.c_out, (h + self.stride - 1) // self.stride,
                                  (w + self.stride - 1) // self.stride)
            nodes.append(out)
        return nodes[3]


# TNB builds the shortcut's batch norm as `nn.BatchNorm2d(planes, affine, track_running_stats)`
# (net_infer/cell_micro.py, ResNetBasicblock), so its two flags land on eps and momentum: the
# benchmark's networks have eps = 1 and momentum = 1 there (True == 1)
SHORTCUT_BN_EPS = 1.0
SHORTCUT_BN_MOMENTUM = 1.0


class BasicBlock(nn.Module):
    """TNB's ResNetBasicblock: two ReLU-conv3x3-BN, plus a 1x1 conv-BN shortcut when the
    shape changes, whose batch norm has eps 1 and momentum 1 as the benchmark's has."""

    def __init__(self, c_in: int, c_out: int, stride: int):
        super().__init__()
        self.conv_a = ReLUConvBN(c_in, c_out, 3, stride)
        self.conv_b = ReLUConvBN(c_out, c_out, 3, 1)
        self.downsample = None
        if stride != 1 or c_in != c_out:
            self.downsample = nn.Sequential(
                nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False),
                nn.BatchNorm2d(c_out, eps=SHORTCUT_BN_EPS, momentum=SHORTCUT_BN_MOMENTUM),
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        residual = x if self.downsample is None else self.downsample(x)
        return residual + self.conv_b(self.conv_a(x))


class Encoder(nn.Module):
    """TNB's MacroNet backbone: a stride-4 stem to 64 channels, then one module of two cells
    per skeleton code (codes 2/4 double the width, 3/4 halve the resolution in the first cell)."""

    def __init__(self, skeleton: Sequence[int], cell: Arch | None):
        super().__init__()
        half = BASE_CHANNELS // 2
        self.stem = nn.Sequential(
            nn.Conv2d(3, half, 3, stride=2, padding=1, bias=False),
            nn.BatchNorm2d(half),
            ReLUConvBN(half, BASE_CHANNELS, 3, 2),
        )
        layers: list[nn.Module] = []
        c = BASE_CHANNELS
        # TNB sizes its dense decoders from a nominal 224-pixel input: 56 after the stem
        self.nominal_width = 224 // 4
        self.stride = 4
        for code in skeleton:
            c_out = 2 * c if code % 2 == 0 else c
            stride = 2 if code > 2 else 1
            self.nominal_width //= stride
            self.stride *= stride
            for s, ci in ((stride, c), (1, c_out)):
                layers.append(BasicBlock(ci, c_out, s) if cell is None else MicroCell(cell, ci, c_out, s))
            c = c_out
        self.layers = nn.Sequential(*layers)
        self.out_channels = c

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(self.stem(x))


class ConvLayer(nn.Sequential):
    """TNB decoder layer: conv (with bias) or stride-2 transposed conv, then BN and LeakyReLU(0.2)."""

    def __init__(self, c_in: int, c_out: int, up: bool = False):
        conv = (nn.ConvTranspose2d(c_in, c_out, 3, stride=2, padding=1, output_padding=1) if up
                else nn.Conv2d(c_in, c_out, 3, padding=1))
        super().__init__(conv, nn.BatchNorm2d(c_out), nn.LeakyReLU(0.2, inplace=False))


def _num_upsample(nominal_width: int, target: int = 256) -> int:
    # TNB: int(log2(256 / feature width)); equals the number of stride-2 modules plus 2
    n = int(math.log2(target / nominal_width))
    if n not in (2, 3, 4, 5, 6):
        raise ArchitectureError(f"TNB decoders need 2 to 6 upsamplings, this encoder needs {n}")
    return n


class SegmentationDecoder(nn.Sequential):
    """TNB's 8-layer decoder for segmentsemantic: 1024 channels, halved per layer."""

    def __init__(self, c_in: int, nominal_width: int, classes: int):
        n_up = _num_upsample(nominal_width)
        layers = [ConvLayer(c_in, 1024)]
        c = 1024
        for _ in range(6 - n_up):
            layers.append(ConvLayer(c, c // 2))
            c //= 2
        for _ in range(n_up - 1):
            layers.append(ConvLayer(c, c // 2, up=True))
            c //= 2
        layers.append(ConvLayer(c, c, up=True))
        layers.append(nn.Conv2d(c, classes, 3, padding=1))
        super().__init__(*layers)


class GenerativeDecoder(nn.Sequential):
    """TNB's 14-layer pix2pix decoder for normal/autoencoder; a tanh image out. Of layers
    3, 5, 7, 9 the last n_up - 2 upsample, layers 11 and 13 always do."""

    def __init__(self, c_in: int, nominal_width: int, channels: int = 3):
        n_up = _num_upsample(nominal_width)
        widths = (1024, 1024, 512, 512, 256, 128, 64, 64, 32, 32, 16, 32, 16)
        optional_up = {3: n_up >= 6, 5: n_up >= 5, 7: n_up >= 4, 9: n_up >= 3, 11: True, 13: True}
        layers, c = [], c_in
        for i, w in enumerate(widths, start=1):
            layers.append(ConvLayer(c, w, up=optional_up.get(i, False)))
            c = w
        layers += [nn.Conv2d(c, channels, 3, padding=1), nn.Tanh()]
        super().__init__(*layers)


class TNBNet(nn.Module):
    """Encoder + the task's decoder (tnb101/model_builder.py). The GAN tasks' discriminator is
    left out: it never runs in forward, so NASLib's parameter count does not see it either."""

    def __init__(self, encoder: Encoder, task: str, kaiming: bool = False):
        super().__init__()
        info = task_info(task)
        self.task, self.kind = task, info.kind
        self.encoder = encoder
        c = encoder.out_channels
        if info.kind in ("classification", "regression"):
            self.decoder = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, info.num_classes))
        elif info.kind == "jigsaw":
            # one shared encoder per tile, features concatenated over the 9 tiles
            self.decoder = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                         nn.Linear(c * NUM_TILES, info.num_classes))
        elif info.kind == "segmentation":
            self.decoder = SegmentationDecoder(c, encoder.nominal_width, info.num_classes)
        else:
            self.decoder = GenerativeDecoder(c, encoder.nominal_width, info.num_classes)
        if kaiming:
            for m in encoder.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    @property
    def fixed_output_sum(self) -> bool:
        """Whether in train mode the outputs summed over a batch are the same for every input: so
        with the pooled linear heads (classification, regression, jigsaw's per-tile encoders). A
        train-mode batch norm's output sums over batch and positions to its shift times their count;
        the stem and every operation end in one, and identities, `none`, the residual and node sums
        and the pooled linear head keep that. The dense decoders' activations break it."""
        return self.kind in ("classification", "regression", "jigsaw")

    def feature_module(self) -> nn.Module:
        """The module whose input Zen-NAS scores, where NASLib's `forward_before_global_avg_pool`
        reads it: the global average pooling of the classification, regression and jigsaw heads
        (for jigsaw, the nine tiles' features concatenated), the last convolution of the dense
        decoders."""
        if isinstance(self.decoder, GenerativeDecoder):
            return self.decoder[-2]  # the tanh follows it
        return self.decoder[-1] if isinstance(self.decoder, SegmentationDecoder) else self.decoder[0]

    def feature_modules(self) -> list[nn.Module]:
        """The encoder's stem and every cell or residual block, in forward order: the modules
        whose outputs are the successive feature maps AZ-NAS reads (the decoder is not among
        them). `feature_forward` runs each of them once."""
        return [self.encoder.stem, *self.encoder.layers]

    def feature_forward(self, x: torch.Tensor) -> torch.Tensor:
        """The encoder on x, each module of `feature_modules` run once. For jigsaw the nine tiles
        are stacked on the batch axis (B * 9 samples, each image's nine in a row), so its batch norms
        take their statistics over all tiles together, where the forward runs the encoder once
        per tile position."""
        if self.kind == "jigsaw":
            if x.dim() == 4:  # an image: its 3x3 grid in raster order, as `_tiles` cuts it
                b, c, h, w = x.shape
                th, tw = h // 3, w // 3
                x = x[:, :, : 3 * th, : 3 * tw].reshape(b, c, 3, th, 3, tw).permute(0, 2, 4, 1, 3, 5)
            x = x.reshape(-1, *x.shape[-3:])
        return self.encoder(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.kind == "jigsaw":
            return self.decoder(self._tiles(x))
        if self.kind in DENSE_KINDS and (x.shape[-1] % self.encoder.stride or x.shape[-2] % self.encoder.stride):
            raise UserError(
                f"{self.task}: input {tuple(x.shape[-2:])} is not a multiple of this network's "
                f"total stride {self.encoder.stride}, so its output would not match the target"
            )
        return self.decoder(self.encoder(x))

    def _tiles(self, x: torch.Tensor) -> torch.Tensor:
        """TNB's SiameseNet: each tile through the encoder on its own (so BatchNorm statistics
        are per tile position), features concatenated along channels. Takes NASLib's tiles
        (B, 9, 3, h, w) or an image (B, 3, H, W) cut into its 3x3 grid in raster order."""
        if x.dim() == 4:
            b, c, h, w = x.shape
            th, tw = h // 3, w // 3
            if th == 0 or tw == 0:
                raise UserError(f"jigsaw input {tuple(x.shape[-2:])} is too small to cut into 3x3 tiles")
            x = x[:, :, : 3 * th, : 3 * tw].reshape(b, c, 3, th, 3, tw).permute(0, 2, 4, 1, 3, 5)
            x = x.reshape(b, NUM_TILES, c, th, tw)
        elif x.dim() != 5 or x.shape[1] != NUM_TILES:
            raise UserError(f"jigsaw input must be (B, 9, 3, h, w) tiles or (B, 3, H, W) images, got {tuple(x.shape)}")
        return torch.cat([self.encoder(x[:, i]) for i in range(NUM_TILES)], dim=1)
