"""TransNAS-Bench-101 (Duan et al., CVPR 2021): the micro (cell) and macro (skeleton) spaces
with NASLib's encodings, and the benchmark's encoder + task-specific decoders in plain PyTorch.

Micro: six ints (a, b, c, d, e, f), each a TNB op code 0 none, 1 skip, 2 conv1x1, 3 conv3x3,
written verbatim into the TNB string `64-41414-a_bc_def` (NASLib's
`convert_op_indices_micro_to_str`). Edge order is the string's: a = 0->1, b = 0->2, c = 1->2,
d = 0->3, e = 1->3, f = 2->3. NASLib builds its TNB models from that string
(`convert_op_indices_micro_to_model`), so the ints are the benchmark's codes, not positions in
NASLib's OP_NAMES ['Identity', 'Zero', 'ReLUConvBN3x3', 'ReLUConvBN1x1'], which only its
unused `create_graph=True` path follows.

Macro: 4 to 6 residual modules, each a TNB code 1 plain, 2 channels x2, 3 stride 2, 4 both,
as the string `64-<codes>-basic`; NASLib pads the codes with zeros to 6 ints. Valid skeletons
have 1..4 downsampling modules (3 or 4) and 1..3 channel-doubling ones (2 or 4): 3,256 in all.
"""
from __future__ import annotations

import ast
import itertools
import math
import re
from typing import Any, Iterator, Sequence

import numpy as np
import torch
import torch.nn as nn

from naslib_plugins.data.tasks import DENSE_KINDS, NUM_TILES, TASK_LOSSES, TASK_NAMES, task_info
from naslib_plugins.errors import ArchitectureError, UserError
from naslib_plugins.spaces.base import SearchSpace

Arch = tuple[int, ...]

BASE_CHANNELS = 64
MICRO_SKELETON = "41414"
MICRO_OPS = ("none", "skip_connect", "conv1x1", "conv3x3")
NONE, SKIP, CONV1, CONV3 = range(4)
NUM_EDGES = 6
# (source node, target node) of each op index; node 0 is the cell input
MICRO_EDGES = ((0, 1), (0, 2), (1, 2), (0, 3), (1, 3), (2, 3))
MACRO_CODES = (1, 2, 3, 4)
MACRO_LENGTHS = (4, 5, 6)
MACRO_SLOTS = 6
_MICRO_STR = re.compile(r"^(\d+)-(\d+)-(\d)_(\d\d)_(\d\d\d)$")
_MACRO_STR = re.compile(r"^(\d+)-(\d+)-basic$")


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _literal(text: str, space: str, original: Any) -> Sequence[Any]:
    try:
        values = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise ArchitectureError(f"unreadable {space} op-index tuple {original!r}") from None
    if not isinstance(values, (tuple, list)):
        raise ArchitectureError(f"unreadable {space} op-index tuple {original!r}")
    return values


def _check_base(base: str, space: str, original: str) -> None:
    if int(base) != BASE_CHANNELS:
        raise ArchitectureError(
            f"{space} string {original!r} has base width {base}; the benchmark only has {BASE_CHANNELS}"
        )


# --------------------------------------------------------------------------- micro encodings


def check_micro(values: Sequence[Any], original: Any) -> Arch:
    if len(values) != NUM_EDGES:
        raise ArchitectureError(
            f"transbench101_micro architecture needs {NUM_EDGES} op codes, got {len(values)}: {original!r}"
        )
    out = []
    for v in values:
        if not _is_int(v):
            raise ArchitectureError(f"transbench101_micro op code {v!r} is not an int in {original!r}")
        if not 0 <= int(v) < len(MICRO_OPS):
            raise ArchitectureError(
                f"transbench101_micro op code {int(v)} out of range 0..3 "
                f"(0 none, 1 skip, 2 conv1x1, 3 conv3x3) in {original!r}"
            )
        out.append(int(v))  # numpy ints would spell keys as "np.int64(1)" under numpy 2
    return tuple(out)


def micro_to_str(arch: Arch) -> str:
    a, b, c, d, e, f = arch
    return f"{BASE_CHANNELS}-{MICRO_SKELETON}-{a}_{b}{c}_{d}{e}{f}"


def micro_from_str(text: str) -> Arch:
    m = _MICRO_STR.match(text)
    if not m:
        raise ArchitectureError(
            f"unreadable transbench101_micro string {text!r}: expected '64-41414-a_bc_def'"
        )
    _check_base(m.group(1), "transbench101_micro", text)
    if m.group(2) != MICRO_SKELETON:
        raise ArchitectureError(
            f"transbench101_micro string {text!r} has skeleton {m.group(2)}; the micro space fixes {MICRO_SKELETON}"
        )
    return check_micro([int(ch) for ch in "".join(m.group(3, 4, 5))], text)


# --------------------------------------------------------------------------- macro encodings


def check_macro(values: Sequence[Any], original: Any) -> Arch:
    """Codes (1..4) of 4-6 modules, optionally zero-padded at the end -> the padded 6-tuple."""
    if not MACRO_LENGTHS[0] <= len(values) <= MACRO_SLOTS:
        raise ArchitectureError(
            f"transbench101_macro architecture needs 4 to 6 module codes (padded with zeros to 6), "
            f"got {len(values)}: {original!r}"
        )
    codes: list[int] = []
    padding = False
    for v in values:
        if not _is_int(v):
            raise ArchitectureError(f"transbench101_macro code {v!r} is not an int in {original!r}")
        v = int(v)
        if v == 0:
            padding = True
            continue
        if padding:
            raise ArchitectureError(f"transbench101_macro zero padding must come last: {original!r}")
        if v not in MACRO_CODES:
            raise ArchitectureError(
                f"transbench101_macro code {v} out of range 1..4 "
                f"(1 plain, 2 channels x2, 3 stride 2, 4 both; 0 pads) in {original!r}"
            )
        codes.append(v)
    if len(codes) < MACRO_LENGTHS[0]:
        raise ArchitectureError(
            f"transbench101_macro architecture has {len(codes)} modules, needs 4 to 6: {original!r}"
        )
    downsamples = sum(c in (3, 4) for c in codes)
    doublings = sum(c in (2, 4) for c in codes)
    if not 1 <= downsamples <= 4:
        raise ArchitectureError(
            f"transbench101_macro architecture needs 1 to 4 downsampling modules (code 3 or 4), "
            f"has {downsamples}: {original!r}"
        )
    if not 1 <= doublings <= 3:
        raise ArchitectureError(
            f"transbench101_macro architecture needs 1 to 3 channel-doubling modules (code 2 or 4), "
            f"has {doublings}: {original!r}"
        )
    return tuple(codes) + (0,) * (MACRO_SLOTS - len(codes))


def macro_to_str(arch: Arch) -> str:
    return f"{BASE_CHANNELS}-{''.join(str(c) for c in arch if c)}-basic"


def macro_from_str(text: str) -> Arch:
    m = _MACRO_STR.match(text)
    if not m:
        raise ArchitectureError(f"unreadable transbench101_macro string {text!r}: expected '64-<4 to 6 codes>-basic'")
    _check_base(m.group(1), "transbench101_macro", text)
    return check_macro([int(ch) for ch in m.group(2)], text)


def _macro_arrangement(length: int, downsamples: int, doublings: int, rng: np.random.Generator) -> Arch:
    """NASLib's macro sampler: `downsamples` modules get +2, `doublings` get +1, shuffled apart."""
    stride = np.zeros(length, dtype=int)
    stride[:downsamples] = 2
    channel = np.zeros(length, dtype=int)
    channel[:doublings] = 1
    codes = 1 + rng.permutation(stride) + rng.permutation(channel)
    return tuple(int(c) for c in codes) + (0,) * (MACRO_SLOTS - length)


# --------------------------------------------------------------------------- spaces


class _TransBench101Space(SearchSpace):
    datasets = TASK_NAMES
    tnb_key = ""  # the search space's key in the benchmark's .pth
    example_str = ""

    def _from_str(self, text: str) -> Arch:
        raise NotImplementedError

    def _check(self, values: Sequence[Any], original: Any) -> Arch:
        raise NotImplementedError

    def parse(self, arch: Any) -> Arch:
        if isinstance(arch, str):
            text = arch.strip()
            if text.startswith(("(", "[")):
                return self._check(_literal(text, self.name, arch), arch)
            if "-" in text:
                return self._from_str(text)
            if text.isdigit():
                return self._check([int(ch) for ch in text], arch)
            raise ArchitectureError(
                f"unreadable {self.name} architecture {arch!r}: expected the TNB string "
                f"({self.example_str}) or NASLib's op indices"
            )
        if isinstance(arch, np.ndarray):
            arch = arch.tolist()
        if isinstance(arch, (tuple, list)):
            return self._check(arch, arch)
        raise ArchitectureError(f"{self.name} architecture of unsupported type {type(arch).__name__}: {arch!r}")

    def hash(self, arch: Any) -> str:
        return str(self.parse(arch))

    def check_dataset(self, dataset: str) -> str:
        if dataset not in TASK_NAMES:
            raise UserError(
                f"space {self.name!r} has no task {dataset!r}; it has: {', '.join(TASK_NAMES)}"
            )
        return dataset

    def loss_fn(self, dataset: str):
        return TASK_LOSSES[self.check_dataset(dataset)]

    def build_model(self, arch: Any, dataset: str, *, init: str = "default") -> nn.Module:
        """The TNB network for one task. init="default" keeps PyTorch's initialisation;
        init="tnb" applies the benchmark's (and so NASLib's) Kaiming-normal fan-out init to the
        encoder's convolutions, as TNB's MacroNet does."""
        if init not in ("default", "tnb"):
            raise UserError(f"unknown init {init!r}; known: default, tnb")
        task = self.check_dataset(dataset)
        return TNBNet(self.build_encoder(self.parse(arch)), task, kaiming=init == "tnb")

    def build_encoder(self, arch: Arch) -> "Encoder":
        """The task-independent encoder (stem and cells) of a parsed architecture; the NASI
        supernet builds its own cells inside one of these."""
        raise NotImplementedError


class TransBench101MicroSpace(_TransBench101Space):
    name = "transbench101_micro"
    tnb_key = "micro"
    example_str = "64-41414-a_bc_def"

    def _from_str(self, text: str) -> Arch:
        return micro_from_str(text)

    def _check(self, values: Sequence[Any], original: Any) -> Arch:
        return check_micro(values, original)

    def to_string(self, arch: Any) -> str:
        return micro_to_str(self.parse(arch))

    def sample(self, rng: np.random.Generator) -> Arch:
        # uniform over all 4,096 cells, every one of which the benchmark trained. (NASLib's
        # sampler also rejects codes (1,1,1,...) and (.,.,1,.,1,1), a test for all-`Zero`
        # edges in its OP_NAMES order that, on the TNB codes, drops skip-only patterns.)
        return tuple(int(i) for i in rng.integers(0, len(MICRO_OPS), size=NUM_EDGES))

    def mutate(self, arch: Any, rng: np.random.Generator) -> Arch:
        # NASLib: one edge gets a different op
        arch = list(self.parse(arch))
        edge = int(rng.integers(NUM_EDGES))
        choices = [op for op in range(len(MICRO_OPS)) if op != arch[edge]]
        arch[edge] = choices[int(rng.integers(len(choices)))]
        return tuple(arch)

    def neighbours(self, arch: Any) -> list[Arch]:
        arch = self.parse(arch)
        return [
            arch[:e] + (op,) + arch[e + 1:]
            for e in range(NUM_EDGES)
            for op in range(len(MICRO_OPS))
            if op != arch[e]
        ]

    def all(self) -> Iterator[Arch]:
        return itertools.product(range(len(MICRO_OPS)), repeat=NUM_EDGES)

    def build_encoder(self, arch: Arch) -> "Encoder":
        return Encoder([int(c) for c in MICRO_SKELETON], cell=arch)


class TransBench101MacroSpace(_TransBench101Space):
    name = "transbench101_macro"
    tnb_key = "macro"
    example_str = "64-xxxxxx-basic"

    def _from_str(self, text: str) -> Arch:
        return macro_from_str(text)

    def _check(self, values: Sequence[Any], original: Any) -> Arch:
        return check_macro(values, original)

    def to_string(self, arch: Any) -> str:
        return macro_to_str(self.parse(arch))

    def sample(self, rng: np.random.Generator) -> Arch:
        # NASLib's sampler: depth 4-6, 1-4 downsamplings, 1-3 doublings, each uniform, then
        # placed at random (so not uniform over the 3,256 skeletons)
        length = int(rng.integers(4, 7))
        return _macro_arrangement(length, int(rng.integers(1, 5)), int(rng.integers(1, 4)), rng)

    def mutate(self, arch: Any, rng: np.random.Generator) -> Arch:
        # NASLib: change the depth, the number of downsamplings or of doublings to another
        # allowed value, then place the modules at random
        codes = [c for c in self.parse(arch) if c]
        counts = [len(codes), sum(c in (3, 4) for c in codes), sum(c in (2, 4) for c in codes)]
        allowed = (MACRO_LENGTHS, (1, 2, 3, 4), (1, 2, 3))
        which = int(rng.integers(3))
        choices = [v for v in allowed[which] if v != counts[which]]
        counts[which] = choices[int(rng.integers(len(choices)))]
        return _macro_arrangement(*counts, rng)

    def neighbours(self, arch: Any) -> list[Arch]:
        """Valid skeletons one edit away: one module's code changed, one module removed, or
        one inserted. (NASLib's get_nbhd draws random placements instead, so is not a fixed set.)"""
        codes = tuple(c for c in self.parse(arch) if c)
        candidates: set[tuple[int, ...]] = set()
        for i in range(len(codes)):
            candidates.update(codes[:i] + (c,) + codes[i + 1:] for c in MACRO_CODES)
            candidates.add(codes[:i] + codes[i + 1:])
        for i in range(len(codes) + 1):
            candidates.update(codes[:i] + (c,) + codes[i:] for c in MACRO_CODES)
        candidates.discard(codes)
        out = []
        for cand in sorted(candidates):
            try:
                out.append(check_macro(cand, cand))
            except ArchitectureError:
                continue
        return out

    def all(self) -> Iterator[Arch]:
        for length in MACRO_LENGTHS:
            for codes in itertools.product(MACRO_CODES, repeat=length):
                if 1 <= sum(c in (3, 4) for c in codes) <= 4 and 1 <= sum(c in (2, 4) for c in codes) <= 3:
                    yield codes + (0,) * (MACRO_SLOTS - length)

    def build_encoder(self, arch: Arch) -> "Encoder":
        return Encoder([c for c in arch if c], cell=None)


# --------------------------------------------------------------------------- model
# Structure and widths follow TNB's code as NASLib ships it
# (naslib/search_spaces/transbench101/tnb101/models/): net_infer/net_macro.py (encoder),
# net_infer/cell_micro.py (cells), net_ops/cell_ops.py (ops), decoder.py (heads).


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


class BasicBlock(nn.Module):
    """TNB's ResNetBasicblock: two ReLU-conv3x3-BN, plus a 1x1 conv-BN shortcut when the
    shape changes."""

    def __init__(self, c_in: int, c_out: int, stride: int):
        super().__init__()
        self.conv_a = ReLUConvBN(c_in, c_out, 3, stride)
        self.conv_b = ReLUConvBN(c_out, c_out, 3, 1)
        self.downsample = None
        if stride != 1 or c_in != c_out:
            self.downsample = nn.Sequential(
                nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False), nn.BatchNorm2d(c_out)
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
