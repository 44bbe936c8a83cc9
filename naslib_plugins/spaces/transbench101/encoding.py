"""TransNAS-Bench-101's encodings (Duan et al., CVPR 2021), the micro (cell) and macro (skeleton)
spaces as NASLib spells them.

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

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from naslib_plugins.errors import ArchitectureError
from naslib_plugins.spaces.encoding import check_op_indices, is_int

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


def _match(pattern: re.Pattern[str], text: str, space: str, expected: str) -> re.Match[str]:
    """`text` matched by `pattern`, a TNB string whose first group is the base width."""
    m = pattern.match(text)
    if not m:
        raise ArchitectureError(f"unreadable {space} string {text!r}: expected {expected!r} or NASLib's op indices")
    if int(m.group(1)) != BASE_CHANNELS:
        raise ArchitectureError(
            f"{space} string {text!r} has base width {m.group(1)}; the benchmark only has {BASE_CHANNELS}"
        )
    return m


# --------------------------------------------------------------------------- micro encodings


def check_micro(values: Sequence[Any], original: Any) -> Arch:
    return check_op_indices(values, MICRO_OPS, NUM_EDGES, original, "transbench101_micro", "op code", "op codes")


def micro_to_str(arch: Arch) -> str:
    a, b, c, d, e, f = arch
    return f"{BASE_CHANNELS}-{MICRO_SKELETON}-{a}_{b}{c}_{d}{e}{f}"


def micro_from_str(text: str) -> Arch:
    m = _match(_MICRO_STR, text, "transbench101_micro", "64-41414-a_bc_def")
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
        if not is_int(v):
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
    m = _match(_MACRO_STR, text, "transbench101_macro", "64-<4 to 6 codes>-basic")
    return check_macro([int(ch) for ch in m.group(2)], text)


def macro_arrangement(length: int, downsamples: int, doublings: int, rng: np.random.Generator) -> Arch:
    """NASLib's macro sampler: `downsamples` modules get +2, `doublings` get +1, shuffled apart."""
    stride = np.zeros(length, dtype=int)
    stride[:downsamples] = 2
    channel = np.zeros(length, dtype=int)
    channel[:doublings] = 1
    codes = 1 + rng.permutation(stride) + rng.permutation(channel)
    return tuple(int(c) for c in codes) + (0,) * (MACRO_SLOTS - length)
