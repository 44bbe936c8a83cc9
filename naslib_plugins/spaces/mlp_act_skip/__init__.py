"""mlp_act_skip: the encoding, the space, its network and supernet, the table of its ground truth."""
from naslib_plugins.spaces.mlp_act_skip.encoding import ACTIVATIONS, NUM_ACTIVATIONS, Arch, skip_pairs
from naslib_plugins.spaces.mlp_act_skip.network import MLPActSkipNetwork, activation_module
from naslib_plugins.spaces.mlp_act_skip.space import TABLE, MLPActSkipSpace
from naslib_plugins.spaces.mlp_act_skip.supernet import MLPActSkipSupernet

__all__ = ["ACTIVATIONS", "NUM_ACTIVATIONS", "Arch", "skip_pairs", "MLPActSkipNetwork", "activation_module", "TABLE",
           "MLPActSkipSpace", "MLPActSkipSupernet"]
