r"""ZO-SGD learning dynamics through the empirical NTK (eNTK) and its random projection.

A model :math:`f(\theta, x) \in \mathbb R^V` (any output shape, flattened) with parameters
:math:`\theta \in \mathbb R^d` (any pytree, flattened) has the tangent matrix
:math:`J(x) = \partial f(\theta, x)/\partial\theta \in \mathbb R^{V\times d}` and the empirical NTK
between an observation input :math:`x_o` and an update input :math:`x_u`

.. math:: K(x_o, x_u) = J(x_o) J(x_u)^\top \in \mathbb R^{V\times V}.

One SGD step on the loss :math:`\ell(f(\theta, x_u))` moves the outputs at :math:`x_o` by
:math:`\Delta f(x_o) = -\eta K(x_o, x_u)\nabla_f\ell + O(\eta^2)`. ZO-SGD with the two-point
estimator :math:`\hat g = \frac cP\sum_p \frac{L(\theta + \epsilon u_p) - L(\theta - \epsilon
u_p)}{2\epsilon}u_p \to \frac cP U^\top U\nabla L` (:math:`\epsilon \to 0`, rows :math:`u_p` of
:math:`U \in \mathbb R^{P\times d}`; :math:`c` = :func:`~jaxopt_icml.zeroth_order.estimators.
normalization`) moves them by :math:`-\eta\hat K\nabla_f\ell` with the ZO (projected) eNTK

.. math:: \hat K(x_o, x_u) = \frac cP\,(J(x_o)U^\top)(J(x_u)U^\top)^\top,
          \qquad E[\hat K] = K,

whose entry :math:`(a, b)` is the inner product of the tangent vectors :math:`J_a(x_o)`,
:math:`J_b(x_u)` after the random projection :math:`v \mapsto \sqrt{c/P}\,Uv` (Johnson-
Lindenstrauss): its error depends on :math:`P` and :math:`V`, not on :math:`d`.

Functions: :func:`jacobian_matrix`, :func:`entk` (exact, reverse mode),
:func:`zo_tangent_features` and :func:`zo_entk` (forward mode, one ``jax.jvp`` per direction, the
Jacobian is never formed), :func:`projected_kernel` (:math:`\hat K` from given Jacobians),
:func:`kernel_error_second_moment` (the exact :math:`E\|\hat K - K\|_F^2`),
:func:`one_step_output_change` (FO and ZO predictions of :math:`\Delta f`), :func:`zo_sgd` (the
ZO-SGD / MeZO optimizer as an ``OracleAlgorithm``), :class:`OutputLoss` (a supervised loss oracle)
and a two-layer tanh MLP (:func:`mlp_init`, :func:`mlp_apply`).

References:
  "Learning Dynamics of Zeroth-Order Optimization: A Kernel Perspective", ICML 2026,
  arXiv:2605.03373. S. Malladi et al., "Fine-Tuning Language Models with Just Forward Passes"
  (MeZO), NeurIPS 2023. Y. Ren, D. J. Sutherland, "Learning dynamics of LLM finetuning", 2024.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import struct

from jaxopt_icml import base
from jaxopt_icml.hyperparams import check_choice, check_float, check_static_int, compute_dtype
from jaxopt_icml.zeroth_order.estimators import (
    DISTRIBUTIONS,
    normalization,
    sample_directions,
    two_point,
    zo_optimizer,
)

__all__ = [
    "zo_entk",
    "entk",
    "projected_kernel",
    "zo_tangent_features",
    "kernel_error_second_moment",
    "one_step_output_change",
    "jacobian_matrix",
    "zo_sgd",
    "OutputLoss",
    "zo_sgd_direction_key",
]

PyTree = Any
LOSSES = ("squared", "cross_entropy")


# --------------------------------------------------------------------------- the exact eNTK


def _flat_outputs(apply_fn, params, x):
    out = jnp.ravel(apply_fn(params, x))
    return out.astype(compute_dtype(out.dtype))


def jacobian_matrix(apply_fn: Callable, params: PyTree, x) -> jax.Array:
    r"""The tangent matrix :math:`J(x) = \partial f(\theta, x)/\partial\theta`, shape ``(V, d)``.

    Reverse mode (``jax.jacrev``); the outputs of ``apply_fn(params, x)`` are flattened (``V``
    entries) and the parameter leaves are concatenated in ``jax.tree.leaves`` order (``d``
    columns), the same order as :func:`~jaxopt_icml.zeroth_order.estimators.sample_directions`.

    Args:
      apply_fn: ``apply_fn(params, x) -> array`` (static callable).
      params: pytree of floating arrays (:math:`\theta`).
      x: the input.

    Returns:
      ``(V, d)`` array in the outputs' compute dtype (float32 for 16-bit outputs).
    """
    jac = jax.jacrev(lambda p: _flat_outputs(apply_fn, p, x))(params)
    leaves = jax.tree.leaves(jac)
    num_out = leaves[0].shape[0]
    return jnp.concatenate([leaf.reshape(num_out, -1) for leaf in leaves], axis=1)


def entk(apply_fn: Callable, params: PyTree, x_o, x_u) -> jax.Array:
    r"""The empirical NTK :math:`K(x_o, x_u) = J(x_o)J(x_u)^\top`, shape ``(V_o, V_u)``.

    Args:
      apply_fn: ``apply_fn(params, x) -> array`` (static callable).
      params: pytree of floating arrays.
      x_o: the observation input (where the output change is looked at).
      x_u: the update input (whose loss the step descends).

    Returns:
      ``(V_o, V_u)`` array (see :func:`jacobian_matrix` for the flattening).

    Example:
      >>> params = mlp_init(jax.random.key(0), 3, 8, 2)
      >>> entk(mlp_apply, params, jnp.ones(3), jnp.zeros(3)).shape
      (2, 2)
    """
    j_o = jacobian_matrix(apply_fn, params, x_o)
    j_u = jacobian_matrix(apply_fn, params, x_u)
    return j_o @ j_u.T


# --------------------------------------------------------------------------- the ZO eNTK


def _check_kernel_args(num_perturbations, distribution, chunk_size):
    num_perturbations = check_static_int("num_perturbations", num_perturbations)
    check_choice("distribution", distribution, DISTRIBUTIONS)
    if chunk_size is not None:
        chunk_size = check_static_int("chunk_size", chunk_size)
        if num_perturbations % chunk_size:
            raise ValueError(f"chunk_size must divide num_perturbations ({num_perturbations}), "
                             f"got {chunk_size}")
    return num_perturbations, chunk_size


def zo_tangent_features(apply_fn: Callable, params: PyTree, inputs: Sequence, key: jax.Array,
                        num_perturbations: int, *, distribution: str = "gaussian",
                        chunk_size: int | None = None) -> tuple[jax.Array, ...]:
    r"""The projected tangent vectors :math:`\sqrt c\,J(x_i)U^\top` of several inputs, SAME
    :math:`U`.

    Column :math:`p` of the result for input :math:`x_i` is :math:`\sqrt c\, J(x_i)u_p`, one
    forward-mode product (``jax.jvp``) per direction: the Jacobian is never formed, so memory
    is :math:`O(d)` per direction in flight. :math:`\hat K(x_i, x_j) = F_i F_j^\top / P`, and
    the first :math:`P' < P` columns are a valid draw with :math:`P'` perturbations.

    Args:
      apply_fn: ``apply_fn(params, x) -> array`` (static callable).
      params: pytree of floating arrays (:math:`\theta`, dimension :math:`d`).
      inputs: a sequence of inputs :math:`x_i` (static length); all share the directions.
      key: PRNG key of the directions.
      num_perturbations: :math:`P \ge 1` (static int).
      distribution: ``"gaussian"`` (default), ``"rademacher"`` or ``"sphere"`` (static; the
        sphere is scaled by :math:`c = d`, the others by :math:`c = 1`, as in
        :mod:`~jaxopt_icml.zeroth_order.estimators`).
      chunk_size: ``None`` (default): ``U = sample_directions(key, params, P)`` in one draw,
        which is exactly the :math:`U` of a ZO-SGD step whose direction key is ``key``
        (:func:`zo_sgd_direction_key`). An int :math:`m` dividing :math:`P`: ``lax.map`` over
        :math:`P/m` chunks, chunk :math:`i` drawn as ``sample_directions(fold_in(key, i),
        params, m)`` (memory :math:`O(md)`; a different but equally distributed :math:`U`).

    Returns:
      A tuple with one ``(V_i, P)`` array per input.

    Raises:
      ValueError: naming the argument for a bad ``num_perturbations``, ``distribution`` or
        ``chunk_size``.
    """
    num_perturbations, chunk_size = _check_kernel_args(num_perturbations, distribution,
                                                       chunk_size)
    inputs = tuple(inputs)
    scale = math.sqrt(normalization(distribution, params))

    def outputs(p):
        return tuple(_flat_outputs(apply_fn, p, x) for x in inputs)

    def project(directions):  # leading axis m -> tuple of (m, V_i)
        def one(u):
            u = jax.tree.map(lambda ui, pi: ui.astype(jnp.result_type(pi)), u, params)
            return jax.jvp(outputs, (params,), (u,))[1]

        return jax.vmap(one)(directions)

    if chunk_size is None:
        feats = project(sample_directions(key, params, num_perturbations,
                                          distribution=distribution))
    else:
        num_chunks = num_perturbations // chunk_size
        feats = jax.lax.map(
            lambda i: project(sample_directions(jax.random.fold_in(key, i), params, chunk_size,
                                                distribution=distribution)),
            jnp.arange(num_chunks))
        feats = tuple(f.reshape((num_perturbations,) + f.shape[2:]) for f in feats)
    return tuple(jnp.asarray(scale, f.dtype) * f.T for f in feats)


def zo_entk(apply_fn: Callable, params: PyTree, x_o, x_u, key: jax.Array,
            num_perturbations: int, *, distribution: str = "gaussian",
            chunk_size: int | None = None) -> jax.Array:
    r"""The ZO (randomly projected) eNTK :math:`\hat K = \frac cP (J_oU^\top)(J_uU^\top)^\top`.

    Computed from :math:`P` Jacobian-vector products per input (:func:`zo_tangent_features`);
    :math:`E[\hat K] = K` (:func:`entk`) for every distribution and
    :math:`E\|\hat K - K\|_F^2` = :func:`kernel_error_second_moment`.

    Args:
      apply_fn, params: the model (see :func:`entk`).
      x_o, x_u: the observation and update inputs.
      key: PRNG key of the directions (see :func:`zo_tangent_features` for the layout).
      num_perturbations: :math:`P \ge 1` (static int).
      distribution: ``"gaussian"`` (default), ``"rademacher"`` or ``"sphere"`` (static).
      chunk_size: ``None`` or a static int dividing :math:`P` (see :func:`zo_tangent_features`).

    Returns:
      ``(V_o, V_u)`` array.

    Example:
      >>> params = mlp_init(jax.random.key(0), 3, 8, 2)
      >>> k_hat = zo_entk(mlp_apply, params, jnp.ones(3), jnp.zeros(3), jax.random.key(1), 64)
      >>> k_hat.shape
      (2, 2)

    Paper mapping:
      :math:`P` = ``num_perturbations`` (the number of perturbations per ZO-SGD step), the
      observation / update samples :math:`x_o, x_u` = ``x_o, x_u``, Gaussian or Rademacher
      :math:`u_p` = ``distribution``. The same :math:`U` multiplies both tangent matrices (the
      kernel interpretation needs it).

    Theory:
      Unbiasedness and the exact second moment (Monte Carlo, ``tests/zeroth_order/
      test_zo_entk.py``); the normalised error scales as :math:`P^{-1/2}`, is independent of the
      width (hence of :math:`d`) and, relative to :math:`\|K\|_F`, grows as :math:`V^{1/2}`
      (``experiments/zeroth_order/zo_entk.py``).
    """
    f_o, f_u = zo_tangent_features(apply_fn, params, (x_o, x_u), key, num_perturbations,
                                   distribution=distribution, chunk_size=chunk_size)
    return f_o @ f_u.T / num_perturbations


def projected_kernel(j_o: jax.Array, j_u: jax.Array, key: jax.Array, num_perturbations: int, *,
                     distribution: str = "gaussian") -> jax.Array:
    r""":math:`\hat K = \frac cP (J_oU^\top)(J_uU^\top)^\top` from explicit Jacobians.

    Args:
      j_o, j_u: ``(V_o, d)`` and ``(V_u, d)`` floating arrays.
      key: PRNG key; ``U = sample_directions(key, j_o[0], P)`` (rows of shape ``(d,)``).
      num_perturbations: :math:`P \ge 1` (static int).
      distribution: ``"gaussian"`` (default), ``"rademacher"`` or ``"sphere"`` (static).

    Returns:
      ``(V_o, V_u)`` array.
    """
    num_perturbations, _ = _check_kernel_args(num_perturbations, distribution, None)
    _check_jacobians(j_o, j_u)
    u = sample_directions(key, j_o[0], num_perturbations, distribution=distribution)
    c = normalization(distribution, j_o[0])
    a, b = j_o @ u.T, j_u @ u.T
    return jnp.asarray(c / num_perturbations, a.dtype) * (a @ b.T)


def _check_jacobians(j_o, j_u):
    if jnp.ndim(j_o) != 2 or jnp.ndim(j_u) != 2 or jnp.shape(j_o)[1] != jnp.shape(j_u)[1]:
        raise ValueError(f"j_o and j_u must be (V_o, d) and (V_u, d) with the same d, got "
                         f"{jnp.shape(j_o)} and {jnp.shape(j_u)}")


def kernel_error_second_moment(j_o: jax.Array, j_u: jax.Array, num_perturbations: int, *,
                               distribution: str = "gaussian") -> jax.Array:
    r"""The exact :math:`E\|\hat K - K\|_F^2` for :math:`P` i.i.d. directions.

    With rows :math:`a` of :math:`J_o` and :math:`b` of :math:`J_u`, one direction contributes
    :math:`X = c\,(a^\top u)(b^\top u)` with :math:`E[X] = a^\top b` and

    * Gaussian: :math:`\mathrm{Var}X = \|a\|^2\|b\|^2 + (a^\top b)^2`, so
      :math:`E\|\hat K - K\|_F^2 = (\|J_o\|_F^2\|J_u\|_F^2 + \|J_oJ_u^\top\|_F^2)/P`;
    * Rademacher (:math:`u_i^4 = 1`): subtract :math:`2\sum_i a_i^2 b_i^2` per entry;
    * sphere with :math:`c = d` (:math:`E u_i^4 = 3/(d(d+2))`,
      :math:`E u_i^2u_j^2 = 1/(d(d+2))`): :math:`\mathrm{Var}X = \frac d{d+2}(\|a\|^2\|b\|^2 +
      2(a^\top b)^2) - (a^\top b)^2`.

    Args:
      j_o, j_u: ``(V_o, d)`` and ``(V_u, d)`` arrays.
      num_perturbations: :math:`P \ge 1` (static int).
      distribution: ``"gaussian"`` (default), ``"rademacher"`` or ``"sphere"`` (static).

    Returns:
      A scalar.
    """
    num_perturbations, _ = _check_kernel_args(num_perturbations, distribution, None)
    _check_jacobians(j_o, j_u)
    no = jnp.sum(j_o**2)
    nu = jnp.sum(j_u**2)
    k2 = jnp.sum((j_o @ j_u.T) ** 2)
    if distribution == "gaussian":
        var = no * nu + k2
    elif distribution == "rademacher":
        var = no * nu + k2 - 2.0 * jnp.sum((j_o**2) @ (j_u**2).T)
    else:
        d = j_o.shape[1]
        var = d / (d + 2.0) * (no * nu + 2.0 * k2) - k2
    return var / num_perturbations


# --------------------------------------------------------------------------- one-step dynamics


def one_step_output_change(apply_fn: Callable, loss_fn: Callable, params: PyTree, x_o, x_u,
                           key: jax.Array, *, learning_rate, num_perturbations: int,
                           distribution: str = "gaussian",
                           chunk_size: int | None = None) -> dict:
    r"""First-order predictions of the change of :math:`f(\theta, x_o)` after one step on
    :math:`x_u`.

    .. math:: \Delta f_{\rm FO}(x_o) = -\eta K(x_o, x_u)\nabla_f\ell, \qquad
              \Delta f_{\rm ZO}(x_o) = -\eta \hat K(x_o, x_u)\nabla_f\ell,

    :math:`\nabla_f\ell` = the gradient of ``loss_fn`` at :math:`f(\theta, x_u)`. They are the
    :math:`O(\eta)` terms of one SGD step and of one ZO-SGD step (:math:`\epsilon \to 0`) whose
    directions are drawn from ``key`` (to match :func:`zo_sgd` with step key ``k``, pass
    ``zo_sgd_direction_key(k)``).

    Args:
      apply_fn, params: the model (see :func:`entk`).
      loss_fn: ``loss_fn(outputs) -> scalar`` on the flattened outputs at ``x_u`` (labels
        closed over, e.g. :meth:`OutputLoss.loss_of_outputs`).
      x_o, x_u: the observation and update inputs.
      key: PRNG key of the ZO directions.
      learning_rate: :math:`\eta > 0` (float; traced values accepted).
      num_perturbations: :math:`P \ge 1` (static int).
      distribution: ``"gaussian"`` (default), ``"rademacher"`` or ``"sphere"`` (static).
      chunk_size: see :func:`zo_tangent_features`.

    Returns:
      ``{"first_order": (V_o,), "zeroth_order": (V_o,), "grad_f": (V_u,)}``.

    Raises:
      ValueError: naming the argument, for an out-of-range hyperparameter.
    """
    check_float("learning_rate", learning_rate, allow_schedule=False)
    num_perturbations, chunk_size = _check_kernel_args(num_perturbations, distribution,
                                                       chunk_size)
    grad_f = jax.grad(loss_fn)(_flat_outputs(apply_fn, params, x_u))
    k_fo = entk(apply_fn, params, x_o, x_u)
    k_zo = zo_entk(apply_fn, params, x_o, x_u, key, num_perturbations,
                   distribution=distribution, chunk_size=chunk_size)
    eta = jnp.asarray(learning_rate, grad_f.dtype)
    return {"first_order": -eta * (k_fo @ grad_f), "zeroth_order": -eta * (k_zo @ grad_f),
            "grad_f": grad_f}


# --------------------------------------------------------------------------- ZO-SGD


def zo_sgd_direction_key(key: jax.Array) -> jax.Array:
    """The key from which a :func:`zo_sgd` step with key ``key`` draws its directions
    (``jax.random.split(key)[0]``, the layout of
    :func:`~jaxopt_icml.zeroth_order.estimators.central_difference_estimator`)."""
    return jax.random.split(key)[0]


def zo_sgd(learning_rate=1e-3, *, eps=1e-3, num_perturbations: int = 1,
           distribution: str = "gaussian", eval_batch_size: int | None = None
           ) -> base.OracleAlgorithm:
    r"""ZO-SGD (MeZO-style SPSA): two-point estimates on :math:`P` shared-seed directions.

    .. math:: \hat g_t = \frac cP\sum_{p=1}^{P}\frac{L(\theta_t + \epsilon u_p) -
              L(\theta_t - \epsilon u_p)}{2\epsilon}\,u_p, \qquad
              \theta_{t+1} = \theta_t - \eta_t\hat g_t,

    i.e. ``zo_optimizer(two_point(eps, num_directions=P, distribution=...),
    optax.sgd(learning_rate))``. The directions are regenerated from the step key (never
    stored in the state): ``sample_directions(zo_sgd_direction_key(key), params, P)``.

    Args:
      learning_rate: :math:`\eta > 0`, a float or an optax schedule (default ``1e-3``).
      eps: the perturbation size :math:`\epsilon > 0` (float, default ``1e-3``).
      num_perturbations: :math:`P \ge 1` (static int, default 1); :math:`2P` loss evaluations
        per step, all in one batched call.
      distribution: ``"gaussian"`` (default), ``"rademacher"`` (SPSA) or ``"sphere"``
        (static; sphere directions are scaled by :math:`d`).
      eval_batch_size: ``None`` (one ``vmap``) or a static int (``lax.map`` chunks).

    Returns:
      ``OracleAlgorithm``: ``init(params, key)``, ``update(state, oracle, key)`` with
      ``oracle.value(params, key) -> scalar`` (e.g. :class:`OutputLoss`); ``Step.info`` has
      ``"oracle_calls"`` (:math:`2P`).

    Raises:
      ValueError: naming the argument for an out-of-range value.

    Example:
      >>> params = mlp_init(jax.random.key(0), 3, 8, 2)
      >>> oracle = OutputLoss(x=jnp.ones(3), y=jnp.zeros(2), apply_fn=mlp_apply)
      >>> alg = zo_sgd(1e-2, num_perturbations=4)
      >>> state, trace = base.run(alg, params, oracle, jax.random.key(1), 10)
      >>> int(trace["oracle_calls"][0])
      8

    Paper mapping:
      :math:`\eta` = ``learning_rate``, :math:`\epsilon` = ``eps``, :math:`P` =
      ``num_perturbations``, Gaussian / Rademacher :math:`u` = ``distribution``. The paper's
      one-step dynamics :math:`\Delta f(x_o) = -\eta\hat K\nabla_f\ell` is
      :func:`one_step_output_change`.

    Theory:
      The actual one-step output change matches :math:`-\eta\hat K\nabla_f\ell` to relative
      error :math:`O(\eta) + O(\epsilon^2)` (claim ``one_step_zo_rel_error`` of
      ``experiments/zeroth_order/zo_entk.py``; ``tests/zeroth_order/test_zo_entk.py``).
    """
    check_float("learning_rate", learning_rate)
    check_float("eps", eps, allow_schedule=False)
    num_perturbations = check_static_int("num_perturbations", num_perturbations)
    check_choice("distribution", distribution, DISTRIBUTIONS)
    if eval_batch_size is not None:
        eval_batch_size = check_static_int("eval_batch_size", eval_batch_size)
    estimator = two_point(eps, num_directions=num_perturbations, distribution=distribution,
                          eval_batch_size=eval_batch_size)
    return zo_optimizer(estimator, optax.sgd(learning_rate))


# --------------------------------------------------------------------------- models and losses


class OutputLoss(struct.PyTreeNode):
    r"""The loss :math:`\ell(f(\theta, x), y)` of one (batch of) sample(s), as an oracle.

    Attributes:
      x: the input passed to ``apply_fn``.
      y: the targets, shape of the flattened outputs (``"squared"``: values; ``"cross_entropy"``:
        probabilities over the last axis).
      apply_fn: ``apply_fn(params, x) -> array`` (static).
      loss: ``"squared"`` (:math:`\tfrac12\|f - y\|^2`, default) or ``"cross_entropy"``
        (:math:`-\sum y\log\mathrm{softmax}(f)`) (static).
    """

    x: jax.Array
    y: jax.Array
    apply_fn: Callable = struct.field(pytree_node=False)
    loss: str = struct.field(pytree_node=False, default="squared")

    def __post_init__(self):
        check_choice("loss", self.loss, LOSSES)

    def outputs(self, params):
        """The flattened outputs :math:`f(\\theta, x)`."""
        return _flat_outputs(self.apply_fn, params, self.x)

    def loss_of_outputs(self, f):
        """:math:`\\ell(f, y)` for flattened outputs ``f``."""
        y = jnp.ravel(self.y).astype(f.dtype)
        if self.loss == "squared":
            return 0.5 * jnp.sum((f - y) ** 2)
        return -jnp.sum(y * jax.nn.log_softmax(f))

    def value(self, params, key=None):
        """:math:`\\ell(f(\\theta, x), y)` (deterministic; ``key`` unused)."""
        del key
        return self.loss_of_outputs(self.outputs(params))

    def grad(self, params, key=None):
        """The exact parameter gradient (reverse mode; ``key`` unused)."""
        del key
        return jax.grad(self.value)(params)


def mlp_init(key: jax.Array, in_dim: int, width: int, out_dim: int, *, dtype=jnp.float32
             ) -> dict:
    r"""Parameters of the two-layer tanh MLP :func:`mlp_apply`, LeCun-normal initialised.

    :math:`W_1 \sim N(0, 1/\text{in\_dim})`, :math:`W_2 \sim N(0, 1/\text{width})`, biases
    :math:`b_1 \sim N(0, 0.1^2)`, :math:`b_2 = 0`. :math:`d = (\text{in\_dim} + 1)\,\text{width}
    + (\text{width} + 1)\,\text{out\_dim}`.

    Args:
      key: PRNG key.
      in_dim, width, out_dim: static ints ``>= 1``.
      dtype: parameter dtype (default float32).

    Returns:
      ``{"w1": (in_dim, width), "b1": (width,), "w2": (width, out_dim), "b2": (out_dim,)}``.
    """
    in_dim = check_static_int("in_dim", in_dim)
    width = check_static_int("width", width)
    out_dim = check_static_int("out_dim", out_dim)
    k1, k2, k3 = jax.random.split(key, 3)
    return {
        "w1": (jax.random.normal(k1, (in_dim, width)) / math.sqrt(in_dim)).astype(dtype),
        "b1": (0.1 * jax.random.normal(k3, (width,))).astype(dtype),
        "w2": (jax.random.normal(k2, (width, out_dim)) / math.sqrt(width)).astype(dtype),
        "b2": jnp.zeros((out_dim,), dtype),
    }


def mlp_apply(params: dict, x: jax.Array) -> jax.Array:
    r""":math:`f(\theta, x) = \tanh(xW_1 + b_1)W_2 + b_2` (``x`` of shape ``(in_dim,)`` or
    ``(n, in_dim)``)."""
    x = jnp.asarray(x).astype(params["w1"].dtype)
    lead = (1,) * (x.ndim - 1)  # explicit broadcasting of the biases over a batch axis
    h = jnp.tanh(x @ params["w1"] + params["b1"].reshape(lead + (-1,)))
    return h @ params["w2"] + params["b2"].reshape(lead + (-1,))
