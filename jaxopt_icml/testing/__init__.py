"""The property matrix every algorithm passes (CONTRIBUTING.md section 5).

A paper's test module declares ``CONTRACT_CASES``: a tuple of :class:`TransformationCase` (for
``optax.GradientTransformation``s) and :class:`AlgorithmCase` (for ``base.OracleAlgorithm``s).
``tests/test_contract.py`` collects them for every catalog row that has code and runs the checks
below on each.

The checks are plain functions ``check(case) -> None`` collected in the ordered dicts
:data:`transformation_checks` and :data:`algorithm_checks` (name -> function), so a test module
parametrizes over ``case x check``. A check raises ``AssertionError`` (with the reason) when the
property fails and ``unittest.SkipTest`` when it does not apply to the case (pytest reports it as
skipped). This package imports no test framework.

Transformation checks (``transformations.py``, ``wrappers.py``): ``jit`` (jit == eager, one
trace for repeated calls), ``unknown_extra_args``, ``vmap`` (over construction keys, or over
parameters), ``pytree`` (mixed tree, ``eval_shape`` init), ``dtypes`` (bf16/f32 kept, state
avals stable), ``float64``, ``determinism``, ``key_reuse``, ``checkpoint`` (orbax), ``chain``,
``inject_hyperparams``, ``multi_steps``, ``masked``, ``apply_if_finite``, ``schedule`` (a
linear schedule: update ``k`` uses ``s(k)``), ``pmap``, ``invalid``. Algorithm checks
(``algorithms.py``): ``jit`` (including no retrace in ``run``/``run_seeds``), ``info``,
``vmap_seeds``, ``shard_seeds``, ``determinism``, ``key_reuse``, ``dtypes`` (f32, f64),
``bfloat16``, ``checkpoint``, ``distributed``, ``sweep`` (a float hyperparameter traced
inside ``jit(vmap(...))`` equals the concrete runs), ``invalid``. Each case's object, jitted
step, jitted reference run and eager run are built once per process and shared by its checks,
since compilation dominates the run time; references that need no compiled program run eagerly.

Transformations are driven by a separable smooth test loss over a mixed pytree
(:func:`make_params`, :func:`matrix_loss`): every leaf ``p`` with path ``k`` contributes
``0.5 * ||a_k * p - b_k||^2`` with fixed coefficients that depend on the path only, so the loss
of a sub-tree (as ``optax.masked`` sees it) is the same function restricted to those leaves.
"""

from __future__ import annotations

from collections.abc import Callable

from jaxopt_icml.testing.algorithms import algorithm_checks
from jaxopt_icml.testing.cases import NUM_STEPS, AlgorithmCase, TransformationCase
from jaxopt_icml.testing.transformations import (
    check_checkpoint,
    check_determinism,
    check_dtypes,
    check_float64,
    check_jit,
    check_key_reuse,
    check_pytree,
    check_shapes,
    check_unknown_extra_args,
    check_vmap,
)
from jaxopt_icml.testing.trees import (
    assert_trees_close,
    assert_trees_equal,
    check_invalid,
    make_params,
    matrix_loss,
)
from jaxopt_icml.testing.wrappers import (
    check_apply_if_finite,
    check_chain,
    check_inject_hyperparams,
    check_masked,
    check_multi_steps,
    check_pmap,
    check_schedule,
)

__all__ = [
    "NUM_STEPS",
    "AlgorithmCase",
    "TransformationCase",
    "algorithm_checks",
    "assert_trees_close",
    "assert_trees_equal",
    "checks_for",
    "make_params",
    "matrix_loss",
    "transformation_checks",
]

transformation_checks: dict[str, Callable[[TransformationCase], None]] = {
    "jit": check_jit,
    "unknown_extra_args": check_unknown_extra_args,
    "vmap": check_vmap,
    "pytree": check_pytree,
    "shapes": check_shapes,
    "dtypes": check_dtypes,
    "float64": check_float64,
    "determinism": check_determinism,
    "key_reuse": check_key_reuse,
    "checkpoint": check_checkpoint,
    "chain": check_chain,
    "inject_hyperparams": check_inject_hyperparams,
    "multi_steps": check_multi_steps,
    "masked": check_masked,
    "apply_if_finite": check_apply_if_finite,
    "schedule": check_schedule,
    "pmap": check_pmap,
    "invalid": check_invalid,
}


def checks_for(case) -> dict[str, Callable]:
    """The checks that apply to ``case``'s type."""
    if isinstance(case, TransformationCase):
        return transformation_checks
    if isinstance(case, AlgorithmCase):
        return algorithm_checks
    raise TypeError(f"not a contract case: {type(case).__name__}")
