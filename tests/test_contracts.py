"""One contract for every registered space and optimizer (the predictors' is in
test_predictors.py, next to the formulas it shares fixtures with): what the rest of the package
assumes of each, checked the same way for all, so a new entry is covered by registering it."""
from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch

from naslib_plugins.data.sources import make_batches
from naslib_plugins.errors import ArchitectureError, UserError
from naslib_plugins.optimizers import OPTIMIZERS
from naslib_plugins.params import defaults, get_params
from naslib_plugins.spaces import SPACES, get_space

SPACE_NAMES = SPACES.names()


def _small_size(space) -> dict:
    """Small networks (4 channels, two of every repeated part), so forward passes take milliseconds."""
    return {key: 4 if key == "C" or "channels" in key else 2 for key in space.default_size}


def _archs(space, n=5, seed=0) -> list:
    rng = np.random.default_rng(seed)
    return [space.sample(rng) for _ in range(n)]


@pytest.mark.parametrize("name", SPACE_NAMES)
def test_encodings_round_trip_and_hashes_are_stable(name):
    space = get_space(name)
    for arch in _archs(space):
        canonical = space.parse(arch)
        assert space.parse(canonical) == canonical
        assert space.parse(space.to_string(canonical)) == canonical
        key = space.hash(canonical)
        assert isinstance(key, str) and key == space.hash(space.parse(space.to_string(canonical)))
        assert key == get_space(name).hash(arch)  # a new instance spells it the same


@pytest.mark.parametrize("name", SPACE_NAMES)
def test_unreadable_architectures_raise_architecture_error(name):
    space = get_space(name)
    for bad in ("", "not an architecture", 3.5, None):
        with pytest.raises(ArchitectureError):
            space.parse(bad)


@pytest.mark.parametrize("name", SPACE_NAMES)
def test_sampling_is_seeded_and_mutation_and_neighbours_stay_valid(name):
    space = get_space(name)
    assert [space.hash(a) for a in _archs(space, seed=3)] == [space.hash(a) for a in _archs(space, seed=3)]
    rng = np.random.default_rng(0)
    for arch in _archs(space):
        key = space.hash(arch)
        child = space.parse(space.mutate(arch, rng))
        assert space.hash(child) != key
        neighbours = space.neighbours(arch)
        assert neighbours and all(space.hash(space.parse(n)) != key for n in neighbours)


@pytest.mark.parametrize("name", SPACE_NAMES)
def test_models_build_at_a_size_and_map_a_batch_to_the_task_output(name):
    space = get_space(name)
    dataset = space.datasets[0]
    batches = make_batches(dataset, batch_size=2, data="gaussian", resolution=32)
    x, y = batches.batch(0)
    size = _small_size(space)
    for arch in _archs(space, n=2):
        torch.manual_seed(0)
        model = space.build_model(arch, dataset, size)
        torch.manual_seed(0)
        again = space.build_model(arch, dataset, size)
        assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), again.state_dict().values()))
        out = model(x)
        assert out.shape[0] == 2 and torch.isfinite(out).all()
        assert torch.isfinite(space.loss_fn(dataset)(out, y))


@pytest.mark.parametrize("name", SPACE_NAMES)
def test_sizes_and_datasets_outside_the_space_are_refused(name):
    space = get_space(name)
    arch = _archs(space, n=1)[0]
    with pytest.raises(UserError, match="takes no option"):
        space.build_model(arch, space.datasets[0], {"no_such_width": 3})
    with pytest.raises(UserError):
        space.check_dataset("no-such-dataset")
    with pytest.raises(UserError, match="no 'no-such-kind' supernet"):
        space.supernet(space.datasets[0], "no-such-kind")


@pytest.mark.parametrize("name", SPACE_NAMES)
def test_every_declared_supernet_builds_and_decodes_into_the_space(name):
    space = get_space(name)
    dataset = space.datasets[0]
    size = {key: 1 if key == "cells" else 4 for key in space.supernet_size}
    for kind in space.supernets:
        supernet = space.supernet(dataset, kind, size)
        alpha = [torch.randn(n, generator=torch.Generator().manual_seed(i)) for i, n in enumerate(supernet.groups)]
        if kind == "nasi":
            space.parse(supernet.decode(alpha))


def _cheapest_space(optimizer) -> str:
    """The first space, cheapest first, that the optimizer can search."""
    for name in ("mlp_act_skip", "nasbench201", "transbench101_micro", "nasbench301"):
        space = get_space(name)
        try:
            optimizer.check(space, space.datasets[0])
        except UserError:
            continue
        return name
    raise AssertionError(f"{optimizer} searches none of the spaces tried")


# the fewest steps, budgets and widths each optimizer accepts, so a search takes about a second
TINY = {"steps": 2, "nu_samples": 2, "budget": 6, "population": 3, "sample_size": 2, "pool": 1,
        "validate_rounds": 1, "channels": 4, "cells": 1}


@pytest.mark.parametrize("name", OPTIMIZERS.names())
def test_options_are_the_constructor_parameters_with_the_class_defaults(name):
    cls = OPTIMIZERS.get(name)
    optimizer = cls()
    # a run's recorded options rebuild the optimizer that made it
    assert set(optimizer.options()) <= set(inspect.signature(cls.__init__).parameters) - {"self"}
    assert cls.from_args(optimizer.options()).options() == optimizer.options()
    plain = {k: v for k, v in defaults(cls).items() if isinstance(v, (int, float, str, bool, type(None)))}
    assert {k: get_params(optimizer)[k] for k in plain} == plain


@pytest.mark.parametrize("name", OPTIMIZERS.names())
def test_a_search_is_determined_by_its_seed_and_lands_in_the_space(name, cifar_npz):
    cls = OPTIMIZERS.get(name)
    optimizer = cls.from_args({k: v for k, v in TINY.items() if k in inspect.signature(cls.__init__).parameters})
    space = get_space(_cheapest_space(optimizer))
    dataset = space.datasets[0]
    if "cells" in optimizer.options() and not space.supernet_size:  # the space's supernet has no free size
        params = inspect.signature(cls.__init__).parameters
        optimizer = cls.from_args({k: v for k, v in TINY.items() if k in params and k not in ("channels", "cells")})
    batches = make_batches(dataset, batch_size=4, seed=0, images=cifar_npz)
    found = [space.hash(optimizer.search(space, dataset, batches, seed, progress=False).arch) for seed in (0, 0, 1)]
    assert found[0] == found[1]
    space.parse(found[2])
