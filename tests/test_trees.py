"""jaxopt_icml.trees: the shared structure/shape check names the leaf that disagrees."""

import jax
import jax.numpy as jnp
import pytest

from jaxopt_icml.trees import check_same_shapes


def test_equal_trees_pass_and_none_skips():
    tree = {"a": jnp.zeros((2, 3)), "b": [jnp.zeros(4)]}
    check_same_shapes("updates", tree, "params", tree)
    check_same_shapes("updates", tree, "params", None)


def test_shape_mismatch_names_the_leaf():
    ups = {"a": jnp.zeros((2, 3)), "b": [jnp.zeros(4)]}
    params = {"a": jnp.zeros((2, 3)), "b": [jnp.zeros(3)]}
    with pytest.raises(ValueError, match=r"opt: updates and params disagree at leaf "
                                         r"\['b'\]\[0\]: shape \(4,\) vs \(3,\)"):
        check_same_shapes("updates", ups, "params", params, context="opt")


def test_structure_mismatch():
    with pytest.raises(ValueError, match=r"different tree structures: updates has leaf "
                                         r"\['a'\] that params lacks"):
        check_same_shapes("updates", {"a": jnp.zeros(2)}, "params", {"b": jnp.zeros(2)})
    with pytest.raises(ValueError, match=r"params has leaf \['c'\] that updates lacks"):
        check_same_shapes("updates", {"a": jnp.zeros(2)}, "params",
                          {"a": jnp.zeros(2), "c": jnp.zeros(1)})
    with pytest.raises(ValueError, match="different tree structures"):  # same keys, other nodes
        check_same_shapes("updates", (jnp.zeros(2),), "params", [jnp.zeros(2)])


def test_works_on_tracers_under_jit():
    @jax.jit
    def f(u, p):
        check_same_shapes("updates", u, "params", p)
        return u
    f(jnp.zeros(3), jnp.zeros(3))
    with pytest.raises(ValueError, match=r"shape \(4,\) vs \(3,\)"):
        f(jnp.zeros(4), jnp.zeros(3))
