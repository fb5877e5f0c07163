"""Template for ``tests/<family>/test_<slug>.py`` (CONTRIBUTING.md section 5).

Copy it to ``tests/<family>/test_my_paper.py`` and replace ``optim``, ``my_paper`` and
``my_method`` with the paper's family, module and constructors. The file name must be
``test_<slug>.py`` for the catalog slug: the ``experiment`` and ``quick_results`` fixtures
(``tests/conftest.py``) find the paper from it, and ``tests/test_contract.py`` collects
``CONTRACT_CASES`` from it.

Three kinds of test live here:

1. ``CONTRACT_CASES``: the property matrix runs every check on each case (nothing else to do);
2. independent references: the mathematics against a closed form, a NumPy re-derivation or a
   known special case, never the code against itself;
3. the claims test: every claim of the experiment at QUICK size, key 0.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from experiments import runner
from jaxopt_icml import base, problems
from jaxopt_icml.optim import my_paper as mp  # replace with the paper's family and module
from jaxopt_icml.testing import AlgorithmCase, TransformationCase

# --------------------------------------------------------------------------- property matrix

# Every documented range: (kwargs override, name of the argument the ValueError must name).
_INVALID = (
    ({"learning_rate": -0.1}, "learning_rate"),
    ({"learning_rate": 0.0}, "learning_rate"),
    ({"num_inner": 0}, "num_inner"),  # replace: one line per validated hyperparameter
)


def _problem(key, dtype):
    """A small noisy quadratic for the AlgorithmCase: ``(x0, oracle)`` in ``dtype``. Built in
    float32 and cast, since QR has no bfloat16 kernel (raise NotImplementedError for a dtype
    the problem cannot take)."""
    quad = problems.random_quadratic(key, 4, mu=0.1, grad_noise=0.1)
    quad = jax.tree.map(lambda a: a.astype(dtype), quad)
    return jnp.ones((4,), dtype), quad


# Keep the case(s) matching the paper's contract (section 1): a TransformationCase for a
# gradient consumer, an AlgorithmCase for an OracleAlgorithm (or for a transformation driven by
# an oracle through base.from_transformation, the path the experiment uses).
CONTRACT_CASES = (
    TransformationCase(
        "my_method", mp.my_method, {"learning_rate": 0.1},
        invalid=_INVALID,
        # extra_args=lambda loss: {"grad_fn": lambda p, i: jax.grad(loss)(p)},  # extra oracles
        # stochastic=True,  # when make() takes key= and results depend on it
    ),
    AlgorithmCase(
        "my_method_alg",
        lambda **kw: base.from_transformation(mp.my_method(**kw), field="grad"),
        {"learning_rate": 0.1}, _problem, stochastic=True,
        invalid=(({"learning_rate": -0.1}, "learning_rate"),),
    ),
)

# --------------------------------------------------------------------------- references


def np_my_method(H, x_star, x0, num_steps, learning_rate):
    """The update rule re-derived in NumPy from the paper (replace with its equations)."""
    x, out = x0.copy(), []
    for _ in range(num_steps):
        x = x - learning_rate * (H @ (x - x_star))
        out.append(x)
    return np.array(out)


@pytest.mark.parametrize("learning_rate", [0.3, 1.0])
def test_my_method_matches_numpy(learning_rate):
    with jax.enable_x64(True):
        quad = problems.random_quadratic(jax.random.PRNGKey(0), 6, mu=0.01,
                                         dtype=jnp.float64)
        x0 = jnp.zeros(6, jnp.float64)
        _, xs = base.run(mp.my_method(learning_rate), x0, quad, jax.random.PRNGKey(1), 20,
                         field="grad", trace_fn=lambda step, state, oracle: step.x)
        ref = np_my_method(np.asarray(quad.H), np.asarray(quad.optimum), np.zeros(6), 20,
                           learning_rate)
    np.testing.assert_allclose(np.asarray(xs), ref, rtol=1e-12, atol=1e-12)


def test_my_method_closed_form():
    """A case with a closed form (replace with the paper's: a parameter at 0 recovering a known
    method, a one-dimensional problem ...): on ``f(x) = 0.5 h (x - a)^2`` gradient descent
    gives ``x_k - a = (1 - lr h)^k (x_0 - a)``."""
    h, a, lr, k = 2.0, 1.5, 0.2, np.arange(1, 31)
    with jax.enable_x64(True):
        quad = problems.random_quadratic(jax.random.PRNGKey(0), 1, mu=h, L=h,
                                         dtype=jnp.float64).replace(optimum=jnp.array([a]))
        _, xs = base.run(mp.my_method(lr), jnp.zeros(1, jnp.float64), quad,
                         jax.random.PRNGKey(1), 30, field="grad",
                         trace_fn=lambda step, state, oracle: step.x[0])
    np.testing.assert_allclose(np.asarray(xs), a + (1 - lr * h) ** k * (0.0 - a), atol=1e-13)


# --------------------------------------------------------------------------- claims


@pytest.mark.claims
def test_claims_quick(experiment, quick_results):
    """Every claim of the experiment at QUICK size with key 0. The default expects exactly
    ``KNOWN_FAILING`` less ``FULL_ONLY_FAILING`` to fail, in both directions (a documented
    miss that starts passing fails this test too). Write the measured values here."""
    runner.check_quick_claims(experiment, quick_results)


@pytest.mark.claims
def test_figures_are_readable(experiment, quick_results):
    """The QUICK figures pass the readability check (titles, axis labels, legends saying what
    the bands are, fitted y-ranges, no series hidden under another)."""
    runner.check_quick_figures(experiment, quick_results)
