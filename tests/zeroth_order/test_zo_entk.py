"""Tests of the ZO eNTK analysis and ZO-SGD (``jaxopt_icml.zeroth_order.zo_entk``).

Independent references: a NumPy re-implementation of the MLP with central finite-difference
Jacobians (the exact eNTK), explicit direction matrices rebuilt from the documented key layout
(the ZO eNTK and one ZO-SGD step re-derived in NumPy), exhaustive enumeration of all Rademacher
vectors for a tiny d (the exact second moment), Monte Carlo for unbiasedness and the Gaussian /
sphere second moments, and the first-order expansion of one step (remainder O(eta^2)).
"""

from __future__ import annotations

import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from experiments import runner
from jaxopt_icml.testing import AlgorithmCase
from jaxopt_icml.zeroth_order.estimators import sample_directions
from jaxopt_icml.zeroth_order.zo_entk import (
    OutputLoss,
    entk,
    jacobian_matrix,
    kernel_error_second_moment,
    mlp_apply,
    mlp_init,
    one_step_output_change,
    projected_kernel,
    zo_entk,
    zo_sgd,
    zo_sgd_direction_key,
    zo_tangent_features,
)

# --------------------------------------------------------------------------- contract case


def _tiny_model(params, x):
    h = jnp.tanh(x @ params["w"] + params["b"])
    return h * params["s"] + params["c"]["t"][0]


def _case_problem(key, dtype):
    x0 = {"w": jnp.full((2, 3), 0.3, dtype), "b": jnp.asarray([-0.2, 0.1, 0.4], dtype),
          "s": jnp.asarray(0.5, dtype), "c": {"t": (jnp.asarray([0.1], dtype),)}}
    x = jax.random.normal(key, (2,), jnp.float32)
    oracle = OutputLoss(x=x, y=jnp.asarray([0.5, -0.5, 1.0], jnp.float32), apply_fn=_tiny_model)
    return x0, oracle


_INVALID = (
    ({"learning_rate": -0.1}, "learning_rate"), ({"learning_rate": float("nan")}, "learning_rate"),
    ({"eps": 0.0}, "eps"), ({"eps": float("inf")}, "eps"),
    ({"num_perturbations": 0}, "num_perturbations"),
    ({"num_perturbations": 2.5}, "num_perturbations"),
    ({"distribution": "uniform"}, "distribution"), ({"eval_batch_size": 0}, "eval_batch_size"),
)

CONTRACT_CASES = (
    AlgorithmCase("zo_sgd", zo_sgd, {"learning_rate": 0.05, "eps": 1e-2, "num_perturbations": 2},
                  _case_problem, stochastic=True, invalid=_INVALID),
)


pytestmark = pytest.mark.x64  # every test runs in float64 (conftest.py)


# Nearly all the time of these tests is XLA compilation: every test compiles ONE program (no
# eager jax.random calls, whose threefry programs compile at full optimisation), at backend
# optimisation level 0 with the classic CPU fusion emitters, which compile several times faster
# (the programs are tiny; the numbers are the same up to rounding).
_jit = functools.partial(jax.jit, compiler_options={"xla_backend_optimization_level": 0,
                                                    "xla_cpu_use_fusion_emitters": False})


# --------------------------------------------------------------------------- NumPy reference


def _np_mlp(p, x):
    return np.tanh(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]


def _np_flat(p):
    return np.concatenate([np.ravel(p[k]) for k in sorted(p)])  # jax.tree.leaves order


def _np_unflat(v, like):
    out, i = {}, 0
    for k in sorted(like):
        n = like[k].size
        out[k] = v[i:i + n].reshape(like[k].shape)
        i += n
    return out


def _np_jacobian(p, x, h=1e-6):
    theta = _np_flat(p)
    cols = []
    for i in range(theta.size):
        e = np.zeros_like(theta)
        e[i] = h
        cols.append((_np_mlp(_np_unflat(theta + e, p), x) - _np_mlp(_np_unflat(theta - e, p), x))
                    / (2 * h))
    return np.stack(cols, 1)


def _model(width=5, outputs=3, in_dim=4, seed=0):
    """A float64 MLP with the initialisation of ``mlp_init`` (drawn with NumPy: nothing to
    compile) and two inputs."""
    rng = np.random.default_rng(seed)
    params = {"w1": rng.normal(size=(in_dim, width)) / np.sqrt(in_dim),
              "b1": 0.1 * rng.normal(size=width),
              "w2": rng.normal(size=(width, outputs)) / np.sqrt(width),
              "b2": np.zeros(outputs)}
    x_o, x_u = rng.normal(size=(2, in_dim))
    return jax.tree.map(jnp.asarray, params), jnp.asarray(x_o), jnp.asarray(x_u)


def test_mlp_init_shapes_and_dtypes():
    shapes = jax.eval_shape(lambda k: mlp_init(k, 4, 5, 3, dtype=jnp.float64), jax.random.key(0))
    assert jax.tree.map(lambda s: (s.shape, s.dtype), shapes) == jax.tree.map(
        lambda v: (v.shape, v.dtype), _model()[0])


def test_entk_matches_finite_difference_jacobians():
    params, x_o, x_u = _model()
    p = jax.tree.map(np.asarray, params)
    j_o, j_u = _np_jacobian(p, np.asarray(x_o)), _np_jacobian(p, np.asarray(x_u))
    k, jac, kb = _jit(lambda p: (entk(mlp_apply, p, x_o, x_u),
                                 jacobian_matrix(mlp_apply, p, x_o),
                                 entk(mlp_apply, p, jnp.stack([x_o, x_u]), x_u)))(params)
    assert jac.shape == (3, 4 * 5 + 5 + 5 * 3 + 3)
    np.testing.assert_allclose(np.asarray(jac), j_o, atol=1e-8)
    np.testing.assert_allclose(np.asarray(k), j_o @ j_u.T, rtol=1e-7, atol=1e-9)
    # batched inputs: outputs flattened, (n V) x (n V)
    np.testing.assert_allclose(np.asarray(kb[:3]), j_o @ j_u.T, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(np.asarray(kb[3:]), j_u @ j_u.T, rtol=1e-7, atol=1e-9)


def test_zo_entk_equals_explicit_projection():
    """K_hat = c/P (J_o U^T)(J_u U^T)^T with U = sample_directions(key, params, P) (one draw)
    or per chunk i sample_directions(fold_in(key, i), params, m); prefixes are valid draws."""
    params, x_o, x_u = _model()
    key = jax.random.key(3)

    @_jit
    def run(params):
        out = {}
        for dist in ("gaussian", "rademacher", "sphere"):
            u = sample_directions(key, params, 6, distribution=dist)
            flat = jnp.concatenate([u[k].reshape(6, -1) for k in sorted(u)], 1)
            out[dist] = (zo_entk(mlp_apply, params, x_o, x_u, key, 6, distribution=dist), flat)
        chunks = [sample_directions(jax.random.fold_in(key, i), params, 2, distribution="gaussian")
                  for i in range(3)]
        out["chunks"] = (zo_entk(mlp_apply, params, x_o, x_u, key, 6, chunk_size=2),
                         jnp.concatenate([jnp.concatenate([c[k].reshape(2, -1) for k in sorted(c)],
                                                          1) for c in chunks], 0))
        out["feats"] = zo_tangent_features(mlp_apply, params, (x_o, x_u), key, 6)
        return out, jacobian_matrix(mlp_apply, params, x_o), jacobian_matrix(mlp_apply, params,
                                                                              x_u)

    out, j_o, j_u = jax.tree.map(np.asarray, run(params))
    d = j_o.shape[1]
    for name, c in (("gaussian", 1.0), ("rademacher", 1.0), ("sphere", float(d)),
                    ("chunks", 1.0)):
        k_hat, u = out[name]
        np.testing.assert_allclose(k_hat, c / 6 * (j_o @ u.T) @ (j_u @ u.T).T, rtol=1e-10,
                                   atol=1e-12)
    f_o, f_u = out["feats"]
    u = out["gaussian"][1]
    np.testing.assert_allclose(f_o[:, :4] @ f_u[:, :4].T / 4,
                               (j_o @ u[:4].T) @ (j_u @ u[:4].T).T / 4, rtol=1e-10, atol=1e-12)


def test_unbiased_and_second_moment_monte_carlo():
    """E K_hat = K and E||K_hat - K||^2 = kernel_error_second_moment (20000 draws, P = 3) for
    every distribution (each against its own formula; 5 standard errors)."""
    params, x_o, x_u = _model(width=4, outputs=2, in_dim=3, seed=1)
    dists = ("gaussian", "rademacher", "sphere")

    @_jit
    def run(key):
        keys = jax.random.split(key, 20000)
        j_o = jacobian_matrix(mlp_apply, params, x_o)
        j_u = jacobian_matrix(mlp_apply, params, x_u)
        return {d: (jax.vmap(lambda k, d=d: zo_entk(mlp_apply, params, x_o, x_u, k, 3,
                                                    distribution=d))(keys),
                    kernel_error_second_moment(j_o, j_u, 3, distribution=d)) for d in dists}, \
            j_o @ j_u.T

    out, k = jax.tree.map(np.asarray, run(jax.random.key(4)))
    moments = {d: out[d][1] for d in dists}
    assert moments["rademacher"] < moments["gaussian"]  # the 2 sum a_i^2 b_i^2 correction
    for d in dists:
        k_hat, m2 = out[d]
        n = k_hat.shape[0]
        se = k_hat.std(0) / np.sqrt(n)
        assert np.all(np.abs(k_hat.mean(0) - k) < 5 * se + 1e-12), d
        err2 = np.sum((k_hat - k[None]) ** 2, (1, 2))
        assert abs(err2.mean() - m2) < 5 * err2.std() / np.sqrt(n), d
        assert abs(err2.mean() / m2 - 1) < 0.05, d


def test_second_moment_exact_by_enumeration():
    """Rademacher, d = 4, P = 1: the exact mean over all 16 sign vectors; Gaussian and sphere
    against the single-direction closed forms from the 4th moments, computed entrywise."""
    rng = np.random.default_rng(0)
    j_o, j_u = rng.normal(size=(3, 4)), rng.normal(size=(2, 4))
    k = j_o @ j_u.T
    signs = np.asarray(list(itertools.product([-1.0, 1.0], repeat=4)))
    exact = np.mean([np.sum((np.outer(j_o @ s, j_u @ s) - k) ** 2) for s in signs])
    got, got5, got_gauss = map(float, _jit(lambda a, b: (
        kernel_error_second_moment(a, b, 1, distribution="rademacher"),
        kernel_error_second_moment(a, b, 5, distribution="rademacher"),
        kernel_error_second_moment(a, b, 1)))(jnp.asarray(j_o), jnp.asarray(j_u)))
    assert got == pytest.approx(exact, rel=1e-12)
    # P perturbations divide it by P
    assert got5 == pytest.approx(exact / 5, rel=1e-12)
    # Gaussian: E[(a.u)^2 (b.u)^2] = |a|^2|b|^2 + 2 (a.b)^2 (Isserlis), entry by entry
    gauss = sum(np.dot(a, a) * np.dot(b, b) + 2 * np.dot(a, b) ** 2 - np.dot(a, b) ** 2
                for a in j_o for b in j_u)
    assert got_gauss == pytest.approx(gauss, rel=1e-12)


def test_projected_kernel_matches_explicit_directions():
    rng = np.random.default_rng(1)
    j_o, j_u = jnp.asarray(rng.normal(size=(3, 50))), jnp.asarray(rng.normal(size=(4, 50)))
    dists = (("gaussian", 1.0), ("sphere", 50.0))
    out = _jit(lambda a, b, key: {d: (sample_directions(key, a[0], 7, distribution=d),
                                      projected_kernel(a, b, key, 7, distribution=d))
                                  for d, _ in dists})(j_o, j_u, jax.random.key(0))
    for dist, c in dists:
        u, got = map(np.asarray, out[dist])
        ref = c / 7 * (np.asarray(j_o) @ u.T) @ (np.asarray(j_u) @ u.T).T
        np.testing.assert_allclose(got, ref, rtol=1e-10)


# --------------------------------------------------------------------------- ZO-SGD and dynamics


def _np_loss(p, x, y):
    return 0.5 * np.sum((_np_mlp(p, x) - y) ** 2)


def test_zo_sgd_step_matches_numpy():
    """theta_1 = theta_0 - eta/P sum_p [L(theta + eps u_p) - L(theta - eps u_p)]/(2 eps) u_p with
    u = sample_directions(zo_sgd_direction_key(key), theta, P)."""
    params, _, x_u = _model(seed=2)
    y = jnp.asarray([0.3, -0.2, 0.5])
    loss = OutputLoss(x=x_u, y=y, apply_fn=mlp_apply)
    key = jax.random.key(5)
    alg = zo_sgd(0.1, eps=1e-3, num_perturbations=3)

    @_jit
    def run(params):
        step, state = alg.update(alg.init(params, None), loss, key)
        return step, sample_directions(zo_sgd_direction_key(key), params, 3,
                                       distribution="gaussian")

    step, u = run(params)
    assert int(step.info["oracle_calls"]) == 6
    p = jax.tree.map(np.asarray, params)
    theta = _np_flat(p)
    uf = np.concatenate([np.asarray(u[k]).reshape(3, -1) for k in sorted(u)], 1)
    g = sum((_np_loss(_np_unflat(theta + 1e-3 * v, p), np.asarray(x_u), np.asarray(y))
             - _np_loss(_np_unflat(theta - 1e-3 * v, p), np.asarray(x_u), np.asarray(y)))
            / 2e-3 * v for v in uf) / 3
    np.testing.assert_allclose(_np_flat(jax.tree.map(np.asarray, step.x)), theta - 0.1 * g,
                               rtol=1e-10, atol=1e-13)


def test_one_step_dynamics_first_order():
    """The actual output change of one ZO-SGD (and SGD) step on x_u, seen on x_o, equals
    -eta K_hat grad_f (-eta K grad_f) up to a remainder O(eta^2): the relative error falls by
    10 when eta does, and K (not K_hat) does not explain the ZO step."""
    params, x_o, x_u = _model(width=16, outputs=4, seed=3)
    loss = OutputLoss(x=x_u, y=jnp.asarray([1.0, -1.0, 0.5, 0.0]), apply_fn=mlp_apply)
    key = jax.random.key(6)
    etas = (1e-4, 1e-5)

    @_jit
    def run(params):
        def at(eta):  # traced learning rate: one program for both
            alg = zo_sgd(eta, eps=1e-5, num_perturbations=8)
            step, _ = alg.update(alg.init(params, None), loss, key)
            pred = one_step_output_change(mlp_apply, loss.loss_of_outputs, params, x_o, x_u,
                                          zo_sgd_direction_key(key), learning_rate=eta,
                                          num_perturbations=8)
            sgd = jax.tree.map(lambda p, g: p - eta * g, params, loss.grad(params))
            return (mlp_apply(step.x, x_o) - mlp_apply(params, x_o),
                    mlp_apply(sgd, x_o) - mlp_apply(params, x_o), pred)

        return jax.vmap(at)(jnp.asarray(etas))

    out = jax.tree.map(np.asarray, run(params))
    rel = {}
    for i, eta in enumerate(etas):
        zo, fo, pred = jax.tree.map(lambda v, i=i: v[i], out)
        rel[eta] = (np.linalg.norm(zo - pred["zeroth_order"]) / np.linalg.norm(zo),
                    np.linalg.norm(fo - pred["first_order"]) / np.linalg.norm(fo),
                    np.linalg.norm(zo - pred["first_order"]) / np.linalg.norm(zo))
        assert rel[eta][0] < 1e-2 and rel[eta][1] < 1e-2 and rel[eta][2] > 0.1
    for i in range(2):
        assert rel[1e-4][i] / rel[1e-5][i] == pytest.approx(10.0, rel=0.05)


def test_output_loss_and_dtypes():
    params, x_o, x_u = _model(seed=4)
    y = jnp.asarray([0.2, 0.3, 0.5])
    ce = OutputLoss(x=x_u, y=y, apply_fn=mlp_apply, loss="cross_entropy")
    p16 = jax.tree.map(lambda v: v.astype(jnp.bfloat16), params)
    # bf16 parameters: features in float32, same shapes
    value, f, (f_o, f_u) = _jit(lambda p, p16: (
        ce.value(p), mlp_apply(p, x_u),
        zo_tangent_features(mlp_apply, p16, (x_o, x_u), jax.random.key(0), 4)))(params, p16)
    f = np.asarray(f)
    ref = -np.sum(np.asarray(y) * (f - np.log(np.sum(np.exp(f)))))
    assert float(value) == pytest.approx(ref, rel=1e-12)
    assert f_o.dtype == jnp.float32 and f_o.shape == (3, 4)


@pytest.mark.parametrize("call,name", [
    (lambda: zo_sgd(0.0), "learning_rate"),
    (lambda: zo_sgd(0.1, eps=-1.0), "eps"),
    (lambda: zo_sgd(0.1, num_perturbations=0), "num_perturbations"),
    (lambda: zo_sgd(0.1, distribution="cube"), "distribution"),
    (lambda: zo_entk(mlp_apply, _model()[0], jnp.ones(4), jnp.ones(4), jax.random.key(0), 0),
     "num_perturbations"),
    (lambda: zo_entk(mlp_apply, _model()[0], jnp.ones(4), jnp.ones(4), jax.random.key(0), 6,
                     chunk_size=4), "chunk_size"),
    (lambda: projected_kernel(jnp.ones((2, 3)), jnp.ones((2, 4)), jax.random.key(0), 2), "j_o"),
    (lambda: kernel_error_second_moment(jnp.ones((2, 3)), jnp.ones((2, 3)), 2,
                                        distribution="x"), "distribution"),
    (lambda: one_step_output_change(mlp_apply, jnp.sum, _model()[0], jnp.ones(4), jnp.ones(4),
                                    jax.random.key(0), learning_rate=-1.0,
                                    num_perturbations=2), "learning_rate"),
    (lambda: OutputLoss(x=jnp.ones(2), y=jnp.ones(2), apply_fn=mlp_apply, loss="hinge"), "loss"),
    (lambda: mlp_init(jax.random.key(0), 3, 0, 2), "width"),
])
def test_rejects_bad_arguments(call, name):
    with pytest.raises(ValueError, match=name):
        call()


# --------------------------------------------------------------------------- claims


@pytest.mark.claims
def test_claims_quick(experiment, quick_results):
    """QUICK config, key 0 (fixed seeds: deterministic). Every claim passes; margins are in the
    experiment's docstring (keys 0-2: slopes within 0.013 of -1/2, width spread at most 6%,
    variance identity within 2%, one-step slopes within 5e-4 of 1)."""
    runner.check_quick_claims(experiment, quick_results)
    summary = experiment.summarize(quick_results)
    # the ZO step is NOT explained by the exact eNTK (K_hat != K at P = 16)
    assert min(summary["one-step rel error median/ZO-SGD P=16 vs eNTK"]) > 0.5


@pytest.mark.claims
def test_figures_are_readable(experiment, quick_results):
    """The QUICK figures (kernel_fidelity and one_step) pass the readability check: titles, axis
    labels, legends that say what the shaded bands are, y-ranges fitted to the data, tick labels
    that do not overlap and no series hidden under another drawn in the same style (the widths'
    fidelity curves coincide)."""
    runner.check_quick_figures(experiment, quick_results)
