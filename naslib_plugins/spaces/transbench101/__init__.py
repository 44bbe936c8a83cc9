"""TransNAS-Bench-101, micro and macro: encodings, the spaces, the benchmark's networks, the
micro space's supernet, the benchmark's reader."""
from naslib_plugins.spaces.transbench101.encoding import (
    BASE_CHANNELS,
    CONV1,
    CONV3,
    MACRO_CODES,
    MACRO_LENGTHS,
    MACRO_SLOTS,
    MICRO_EDGES,
    MICRO_OPS,
    MICRO_SKELETON,
    NONE,
    NUM_EDGES,
    SKIP,
    Arch,
    check_macro,
    check_micro,
    macro_from_str,
    macro_to_str,
    micro_from_str,
    micro_to_str,
)
from naslib_plugins.spaces.transbench101.ground_truth import load_tnb_database, read_tnb_pth
from naslib_plugins.spaces.transbench101.network import (
    BasicBlock,
    ConvLayer,
    Encoder,
    FactorizedReduce,
    GenerativeDecoder,
    MicroCell,
    ReLUConvBN,
    SegmentationDecoder,
    TNBNet,
)
from naslib_plugins.spaces.transbench101.space import TransBench101MacroSpace, TransBench101MicroSpace
from naslib_plugins.spaces.transbench101.supernet import TNBMicroSuperCell, TNBMicroSupernet, TNBMixedEdge

__all__ = [
    "BASE_CHANNELS", "CONV1", "CONV3", "MACRO_CODES", "MACRO_LENGTHS", "MACRO_SLOTS", "MICRO_EDGES", "MICRO_OPS",
    "MICRO_SKELETON", "NONE", "NUM_EDGES", "SKIP", "Arch", "check_macro", "check_micro", "macro_from_str",
    "macro_to_str", "micro_from_str", "micro_to_str", "load_tnb_database", "read_tnb_pth", "BasicBlock", "ConvLayer",
    "Encoder", "FactorizedReduce", "GenerativeDecoder", "MicroCell", "ReLUConvBN", "SegmentationDecoder", "TNBNet",
    "TransBench101MacroSpace", "TransBench101MicroSpace", "TNBMicroSuperCell", "TNBMicroSupernet", "TNBMixedEdge",
]
