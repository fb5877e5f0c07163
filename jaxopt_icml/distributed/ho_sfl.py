r"""HO-SFL: hybrid-order split federated learning, and its first- and zeroth-order baselines.

A model is split at a cut layer: client part :math:`z = \phi(w_c; x)\in\mathbb R^{B\times k}`,
server part :math:`\ell(\psi(w_s; z), y)`. Every client holds its own data; the logical server
is emulated data-parallel (each worker also runs the server computation on its own client's
activations and the server gradient is ``lax.pmean``-ed, which equals one server processing all
clients' activations). Three per-client steps are written once with collectives over
``axis_name`` and run on all clients with :func:`jaxopt_icml.mesh.across_workers`:

* :func:`ho_sfl` (the paper): server first order, clients zeroth order (forward passes only),
  client update aggregated as ``num_perturbations`` scalars (dimension-free);
* :func:`fo_sfl` (SplitFed baseline): clients backpropagate the server's cut-layer cotangents,
  client gradients FedAvg-ed (:math:`d_c` floats per client);
* :func:`zo_fl` (full-model ZO FL, MeZO/DeComFL style): zeroth order on the whole model, P
  scalars per client, no activations exchanged.

The data oracle is :class:`ClientData` (one client's local examples; :func:`make_split_data`
builds teacher-labelled, Dirichlet label-skewed clients with a leading worker axis) and
:func:`init_mlp` / :func:`apply_mlp` are the small pure MLPs used for both halves.

References:
  Qiyuan Chen, Xian Wu, Yi Wang, Xianhao Chen, "HO-SFL: Hybrid-Order Split Federated Learning
  with Backprop-Free Clients and Dimension-Free Aggregation", ICML 2026, arXiv:2603.14773.
  C. Thapa et al., "SplitFed: when federated learning meets split learning", AAAI 2022.
  S. Malladi et al., "Fine-tuning language models with just forward passes" (MeZO), 2023.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxopt_icml import base
from jaxopt_icml import mesh as mesh_lib
from jaxopt_icml.hyperparams import check_choice, check_float, check_static_int, compute_dtype
from jaxopt_icml.zeroth_order.estimators import (
    central_differences,
    normalization,
    sample_directions,
)

__all__ = [
    "ho_sfl",
    "fo_sfl",
    "zo_fl",
    "ho_sfl_worker",
    "fo_sfl_worker",
    "zo_fl_worker",
    "client_zo_deltas",
    "split_loss",
    "make_split_data",
    "SplitState",
    "ClientData",
]

PyTree = Any
DISTRIBUTIONS = ("gaussian", "rademacher", "sphere")


# --------------------------------------------------------------------------- model and data


def init_mlp(key: jax.Array, sizes, dtype=jnp.float32) -> list:
    """Parameters ``[{"w": (a, b), "b": (b,)}, ...]`` of an MLP with layer widths ``sizes``
    (He-scaled Gaussian weights, zero biases)."""
    sizes = tuple(check_static_int("sizes", s) for s in sizes)
    if len(sizes) < 2:
        raise ValueError(f"sizes must hold at least an input and an output width, got {sizes}")
    keys = jax.random.split(key, len(sizes) - 1)
    return [{"w": (jax.random.normal(k, (a, b), jnp.float32) * jnp.sqrt(2.0 / a)).astype(dtype),
             "b": jnp.zeros((b,), dtype)}
            for k, a, b in zip(keys, sizes[:-1], sizes[1:], strict=True)]


def apply_mlp(params: list, x: jax.Array) -> jax.Array:
    """``relu`` hidden layers and a linear last layer; ``x`` of shape ``(batch, in)``."""
    for i, layer in enumerate(params):
        x = x @ layer["w"].astype(x.dtype) + layer["b"].astype(x.dtype)[None, :]
        if i < len(params) - 1:
            x = jax.nn.relu(x)
    return x


class ClientData(NamedTuple):
    """One client's local examples (a leading worker axis when stacked for all clients).

    Attributes:
      inputs: ``(n, d_in)`` features.
      labels: ``(n,)`` int32 class labels.
    """

    inputs: jax.Array
    labels: jax.Array

    def sample(self, key: jax.Array, batch_size: int):
        """A minibatch of ``batch_size`` examples drawn uniformly with replacement:
        ``idx = jax.random.randint(key, (batch_size,), 0, n)``."""
        idx = jax.random.randint(key, (batch_size,), 0, self.labels.shape[0])
        return self.inputs[idx], self.labels[idx]


def make_split_data(key: jax.Array, *, num_clients: int, samples_per_client: int,
                    in_dim: int = 32, num_classes: int = 10, alpha: float = 0.5,
                    teacher_hidden: int = 64, dtype=jnp.float32) -> ClientData:
    r"""Teacher-labelled synthetic classification data, label-skewed over clients.

    Inputs :math:`x \sim N(0, I)`; labels :math:`y = \arg\max` of a random tanh MLP
    ``in_dim -> teacher_hidden -> num_classes``. Client :math:`i` draws class proportions
    :math:`p_i \sim \mathrm{Dirichlet}(\alpha)` and ``samples_per_client`` examples of a common
    pool with probability :math:`\propto p_i[y]/\#\{y\}` (non-IID label skew).

    Host-side: drawn with NumPy from a generator seeded by the key's data (a concrete key;
    not traceable). A jitted Dirichlet (``jax.random.gamma`` rejection loops) and weighted
    ``jax.random.choice`` cost tens of seconds of XLA compilation on CPU, more than the
    training program itself.

    Returns:
      :class:`ClientData` with leaves of leading axis ``num_clients``.
    """
    num_clients = check_static_int("num_clients", num_clients)
    n = check_static_int("samples_per_client", samples_per_client)
    check_float("alpha", alpha, allow_schedule=False)
    if isinstance(key, jax.core.Tracer):
        raise ValueError("make_split_data runs on the host: key must be a concrete PRNG key")
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        key = jax.random.key_data(key)
    rng = np.random.default_rng([int(v) for v in np.asarray(key, np.uint32).ravel()])
    pool = max(4 * n * num_clients, 64 * num_classes)
    x = rng.standard_normal((pool, in_dim)).astype(np.float32)
    w1 = rng.standard_normal((in_dim, teacher_hidden)) / np.sqrt(in_dim)
    w2 = rng.standard_normal((teacher_hidden, num_classes)) / np.sqrt(teacher_hidden)
    y = np.argmax(np.tanh(2.0 * x @ w1) @ w2, axis=1).astype(np.int32)
    counts = np.bincount(y, minlength=num_classes).astype(np.float64)
    props = rng.dirichlet(np.full((num_classes,), alpha), num_clients)
    inputs, labels = [], []
    for p in props:
        weight = p[y] / np.maximum(counts[y], 1.0)
        idx = rng.choice(pool, n, p=weight / weight.sum())
        inputs.append(x[idx])
        labels.append(y[idx])
    return ClientData(jnp.asarray(np.stack(inputs)).astype(dtype), jnp.asarray(np.stack(labels)))


def split_loss(client_apply, server_apply, loss_fn, params: dict, inputs, labels):
    """The end-to-end loss ``loss_fn(server_apply(w_s, client_apply(w_c, x)), y)``."""
    z = client_apply(params["client"], inputs)
    return loss_fn(server_apply(params["server"], z), labels)


# --------------------------------------------------------------------------- ZO building blocks


def shared_round_key(key: jax.Array, axis_name: str) -> jax.Array:
    """The round seed every client uses: 32 random bits drawn from worker 0's ``key`` and
    broadcast (``lax.all_gather``), so the directions never depend on the device id."""
    bits = jax.random.bits(key, (), jnp.uint32)
    return jax.random.key(jax.lax.all_gather(bits, axis_name)[0], impl=jax.random.key_impl(key))


def _direction(round_key, w, p, distribution):
    u = sample_directions(jax.random.fold_in(round_key, p), w, 1, distribution=distribution)
    return jax.tree.map(lambda a: a[0], u)


def _over_perturbations(fn, num, batch):
    ps = jnp.arange(num, dtype=jnp.int32)
    return jax.vmap(fn)(ps) if batch is None else jax.lax.map(fn, ps, batch_size=batch)


def client_zo_deltas(objective: Callable, w: PyTree, round_key: jax.Array, eval_key: jax.Array,
                     *, num_perturbations: int, radius, distribution: str = "gaussian",
                     perturbation_batch: int | None = None) -> jax.Array:
    r"""The ``P`` antithetic differences :math:`\delta_p = [c(w + \epsilon u_p) -
    c(w - \epsilon u_p)]/(2\epsilon)`, :math:`u_p` drawn from ``fold_in(round_key, p)``
    (:func:`~jaxopt_icml.zeroth_order.estimators.sample_directions`, one direction of the
    whole pytree). Forward evaluations only (``central_differences``); with
    ``perturbation_batch`` they run ``perturbation_batch`` directions at a time and the two
    points of a direction one after the other (``lax.map``), so memory is that of an inference
    pass (directions regenerated, never stored together).

    Returns:
      ``(P,)`` array in the compute dtype of ``w``: the only model-update payload a client sends.
    """

    def one(p):
        u = _direction(round_key, w, p, distribution)
        radii = jnp.full((1,), radius, jnp.result_type(jax.tree.leaves(u)[0]))
        d = central_differences(objective, w, jax.tree.map(lambda a: a[None], u), radii,
                                jax.random.fold_in(eval_key, p),
                                eval_batch_size=None if perturbation_batch is None else 1)
        return d[0, 0]

    return _over_perturbations(one, num_perturbations, perturbation_batch)


def zo_direction(deltas: jax.Array, w: PyTree, round_key: jax.Array, *,
                 distribution: str = "gaussian", perturbation_batch: int | None = None):
    r"""The estimate :math:`g = \frac{c}{P}\sum_p \delta_p u_p` (``c`` =
    :func:`~jaxopt_icml.zeroth_order.estimators.normalization`) rebuilt from the (averaged)
    scalars and the regenerated directions; a pytree like ``w`` in its leaves' dtypes."""
    num = deltas.shape[0]
    scale = normalization(distribution, w) / num
    if perturbation_batch is None:
        u = jax.vmap(lambda p: _direction(round_key, w, p, distribution))(
            jnp.arange(num, dtype=jnp.int32))
        g = jax.tree.map(lambda a: jnp.tensordot(deltas.astype(a.dtype), a, 1), u)
    else:
        def body(acc, p):
            u = _direction(round_key, w, p, distribution)
            return jax.tree.map(lambda s, a: s + deltas[p].astype(a.dtype) * a, acc, u), None

        zeros = jax.tree.map(lambda a: jnp.zeros(jnp.shape(a), compute_dtype(a.dtype)), w)
        g, _ = jax.lax.scan(body, zeros, jnp.arange(num, dtype=jnp.int32))
    return jax.tree.map(lambda gi, wi: (scale * gi).astype(wi.dtype), g, w)


# --------------------------------------------------------------------------- state and checks


class SplitState(NamedTuple):
    """Per-client state (every client holds the same replicated values).

    Attributes:
      params: ``{"client": w_c, "server": w_s}``.
      client_opt: optax state of the client optimizer.
      server_opt: optax state of the server optimizer.
    """

    params: dict
    client_opt: Any
    server_opt: Any


def _check_common(client_apply, server_apply, loss_fn, batch_size, client_optimizer,
                  server_optimizer, axis_name):
    for name, fn in (("client_apply", client_apply), ("server_apply", server_apply),
                     ("loss_fn", loss_fn)):
        if not callable(fn):
            raise ValueError(f"{name} must be callable, got {fn!r}")
    batch_size = check_static_int("batch_size", batch_size)
    opts = []
    for name, opt, default in (("client_optimizer", client_optimizer, optax.sgd(1e-3)),
                               ("server_optimizer", server_optimizer, optax.adam(1e-3))):
        opt = default if opt is None else opt
        if not isinstance(opt, optax.GradientTransformation
                          | optax.GradientTransformationExtraArgs):
            raise ValueError(f"{name} must be an optax.GradientTransformation or None, "
                             f"got {opt!r}")
        opts.append(opt)
    if not isinstance(axis_name, str) or not axis_name:
        raise ValueError(f"axis_name must be a non-empty str, got {axis_name!r}")
    return batch_size, opts[0], opts[1]


def _check_zo(num_perturbations, zo_eps, distribution, perturbation_batch):
    num_perturbations = check_static_int("num_perturbations", num_perturbations)
    check_float("zo_eps", zo_eps, allow_schedule=False)
    check_choice("distribution", distribution, DISTRIBUTIONS)
    if perturbation_batch is not None:
        perturbation_batch = check_static_int("perturbation_batch", perturbation_batch)
    return num_perturbations, perturbation_batch


def _bits(*counts) -> jax.Array:
    """``sum(n * bits(dtype))`` over ``(n, dtype)`` pairs, computed in Python from static
    shapes: one float32 constant of the program."""
    return jnp.asarray(sum(int(n) * jnp.finfo(dt).bits for n, dt in counts), jnp.float32)


def _init(client_opt, server_opt):
    def init(x0, key):
        del key
        return SplitState(x0, client_opt.init(x0["client"]), server_opt.init(x0["server"]))

    return init


def _apply(opt, grads, opt_state, params):
    grads = jax.tree.map(lambda g, p: g.astype(p.dtype), grads, params)
    updates, opt_state = opt.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state


def _server_step(server_apply, loss_fn, server_opt, w_s, s_opt, z, labels, axis_name):
    """Server, first order at the received activations: loss, cotangent, pmean-ed step."""
    def server_loss(w, z_):
        return loss_fn(server_apply(w, z_), labels)

    loss, (g_s, g_z) = jax.value_and_grad(server_loss, argnums=(0, 1))(w_s, z)
    g_s = jax.lax.pmean(g_s, axis_name)  # one server over every client's activations
    w_s, s_opt = _apply(server_opt, g_s, s_opt, w_s)
    return jax.lax.pmean(loss, axis_name), g_z, w_s, s_opt


# --------------------------------------------------------------------------- HO-SFL


def ho_sfl_worker(client_apply: Callable, server_apply: Callable, loss_fn: Callable, *,
                  batch_size: int = 32, num_perturbations: int = 16, zo_eps=1e-3, rho=1.0,
                  client_optimizer=None, server_optimizer=None, distribution: str = "gaussian",
                  perturbation_batch: int | None = None,
                  axis_name: str = mesh_lib.DEFAULT_AXIS) -> base.OracleAlgorithm:
    """One HO-SFL client (with its share of the emulated server), collectives over
    ``axis_name``; :func:`ho_sfl` runs all clients. Arguments as in :func:`ho_sfl`."""
    batch_size, client_opt, server_opt = _check_common(
        client_apply, server_apply, loss_fn, batch_size, client_optimizer, server_optimizer,
        axis_name)
    num_perturbations, perturbation_batch = _check_zo(num_perturbations, zo_eps, distribution,
                                                      perturbation_batch)
    check_float("rho", rho, strict=False, allow_schedule=False)

    def update(state, oracle, key):
        k_seed, k_batch, k_eval = jax.random.split(key, 3)
        inputs, labels = oracle.sample(k_batch, batch_size)
        w_c, w_s = state.params["client"], state.params["server"]
        # client forward (no residuals kept) -> activations to the server
        phi = client_apply(w_c, inputs)
        loss, g_z, w_s, s_opt = _server_step(server_apply, loss_fn, server_opt, w_s,
                                             state.server_opt, phi, labels, axis_name)
        # lifted variables re-initialised each round at the saddle point: z = phi, lambda = g_z
        lam = jax.lax.stop_gradient(g_z)
        z = jax.lax.stop_gradient(phi)
        ct = compute_dtype(phi.dtype)
        rho_ = jnp.asarray(rho, ct)

        def client_objective(w, key_):
            del key_
            r = client_apply(w, inputs.astype(ct)).astype(ct) - z.astype(ct)
            return jnp.sum(lam.astype(ct) * r) + 0.5 * rho_ * jnp.sum(r * r)

        round_key = shared_round_key(k_seed, axis_name)
        deltas = client_zo_deltas(client_objective, w_c, round_key, k_eval,
                                  num_perturbations=num_perturbations, radius=zo_eps,
                                  distribution=distribution,
                                  perturbation_batch=perturbation_batch)
        deltas = jax.lax.pmean(deltas, axis_name)  # the dimension-free aggregation: P scalars
        g_c = zo_direction(deltas, w_c, round_key, distribution=distribution,
                           perturbation_batch=perturbation_batch)
        w_c, c_opt = _apply(client_opt, g_c, state.client_opt, w_c)
        params = {"client": w_c, "server": w_s}
        act = phi.size
        info = {
            "oracle_calls": jnp.asarray(2 * num_perturbations + 2, jnp.int32),
            "bits_sent": _bits((act, phi.dtype), (num_perturbations, deltas.dtype)),
            "bits_received": _bits((act, g_z.dtype), (num_perturbations, deltas.dtype),
                                   (1, jnp.float32)),
            "loss": loss.astype(jnp.float32),
        }
        return base.Step(params, info), SplitState(params, c_opt, s_opt)

    return base.OracleAlgorithm(_init(client_opt, server_opt), update)


def ho_sfl(client_apply: Callable, server_apply: Callable, loss_fn: Callable, *,
           num_workers: int, batch_size: int = 32, num_perturbations: int = 16, zo_eps=1e-3,
           rho=1.0, client_optimizer=None, server_optimizer=None,
           distribution: str = "gaussian", perturbation_batch: int | None = None, mesh=None,
           axis_name: str = mesh_lib.DEFAULT_AXIS) -> base.OracleAlgorithm:
    r"""Hybrid-order split federated learning: first-order server, zeroth-order clients.

    Each round, client :math:`i` draws a minibatch :math:`(x_i, y_i)` of size :math:`B` and

    1. sends its activations :math:`\phi_i = \phi(w_c; x_i)` (forward pass, :math:`Bk` floats);
    2. the server takes a first-order step on
       :math:`\frac1N\sum_i \ell(\psi(w_s; \phi_i), y_i)` (``server_optimizer``, gradient
       ``pmean``-ed over clients) and returns the cotangent
       :math:`\lambda_i = \nabla_z \ell(\psi(w_s; z), y_i)|_{z=\phi_i}` (:math:`Bk` floats);
    3. with :math:`z_i = \phi_i` the client's part of the Lagrangian is
       :math:`c_i(w) = \lambda_i^\top(\phi(w; x_i) - z_i) + \frac\rho2\|\phi(w; x_i) - z_i\|^2`;
       with :math:`u_p` from the shared round seed,
       :math:`\delta_{i,p} = [c_i(w_c + \epsilon u_p) - c_i(w_c - \epsilon u_p)]/(2\epsilon)`,
       :math:`p = 1..P` (forward passes only), sent as :math:`P` scalars;
    4. :math:`\bar\delta_p = \frac1N\sum_i\delta_{i,p}` (``lax.pmean``); every client
       regenerates :math:`u_p` and applies ``client_optimizer`` to
       :math:`g_c = \frac{c}{P}\sum_p \bar\delta_p u_p` (:math:`c = 1` for Gaussian/Rademacher
       directions, :math:`d_c` for the sphere), so all clients keep the same :math:`w_c`.

    Since :math:`\nabla c_i(w_c) = J_i^\top\lambda_i` (the :math:`\rho` term vanishes at
    :math:`z_i = \phi_i`), :math:`E[g_c]` is the true client gradient up to :math:`O(\epsilon^2)`.

    Args:
      client_apply: ``client_apply(w_c, inputs) -> activations (B, k)``.
      server_apply: ``server_apply(w_s, activations) -> outputs``.
      loss_fn: ``loss_fn(outputs, labels) -> scalar`` (a mean over the batch).
      num_workers: number of clients :math:`N` (static, positive).
      batch_size: :math:`B \ge 1` per client (static, default 32).
      num_perturbations: :math:`P \ge 1` (static, default 16).
      zo_eps: :math:`\epsilon > 0` (float, default ``1e-3``; relative to the parameter scale).
      rho: :math:`\rho \ge 0` (float, default 1).
      client_optimizer: optax transformation of :math:`w_c` (default ``optax.sgd(1e-3)``).
      server_optimizer: optax transformation of :math:`w_s` (default ``optax.adam(1e-3)``).
      distribution: ``"gaussian"`` (default, the paper's :math:`N(0, I)`), ``"rademacher"``
        or ``"sphere"`` (static).
      perturbation_batch: ``None`` (all :math:`2P` forward passes in one ``vmap``) or a static
        int (``lax.map`` chunks: inference-level client memory). Same numbers either way.
      mesh: ``None`` (simulate the clients on one device) or a mesh (``jax.shard_map``).
      axis_name: collective axis name (default ``"workers"``).

    Returns:
      An ``OracleAlgorithm`` on ``x0 = {"client": w_c, "server": w_s}`` whose oracle is a
      :class:`ClientData` with a leading worker axis. ``Step.x`` is the new parameters;
      ``info``: ``oracle_calls`` (:math:`2P + 2` per client: client forward, server
      value-and-gradient, :math:`2P` client objective evaluations; summed over clients),
      ``bits_sent`` (uplink, summed: per client :math:`32(Bk + P)` in float32),
      ``bits_received`` (downlink per client: cotangents, :math:`P` averaged scalars, the
      32-bit round seed), ``loss`` (minibatch loss before the step, averaged over clients).

    Raises:
      ValueError: naming the argument for an out-of-range value.

    Example:
      >>> data = make_split_data(jax.random.key(0), num_clients=4, samples_per_client=64)
      >>> x0 = {"client": init_mlp(jax.random.key(1), (32, 64, 16)),
      ...       "server": init_mlp(jax.random.key(2), (16, 32, 10))}
      >>> ce = lambda o, y: optax.softmax_cross_entropy_with_integer_labels(o, y).mean()
      >>> alg = ho_sfl(apply_mlp, apply_mlp, ce, num_workers=4)
      >>> state, trace = base.run(alg, x0, data, jax.random.key(3), 10)

    Paper mapping:
      :math:`w_c, w_s` -> ``x0["client"], x0["server"]``; :math:`P` -> ``num_perturbations``;
      :math:`\epsilon` -> ``zo_eps``; :math:`\rho` -> ``rho``; client/server learning rates ->
      the two optax transformations. The Lagrangian split is our reconstruction (the arXiv
      text was not available): the per-sample :math:`z_i, \lambda_i` are re-initialised every
      round at their saddle-point values (:math:`z_i = \phi_i`, :math:`\lambda_i` = the
      cotangent), the spec's stated option for minibatches, so the server's :math:`z` and dual
      steps are identities and no ``z_lr`` argument is needed. The logical server is emulated
      data-parallel (its gradient ``pmean``-ed); that emulation traffic is not counted in
      ``bits_sent``.

    Theory:
      Rate :math:`O(\sqrt{d_c/(PT)})` (only the client dimension enters), model-update uplink
      :math:`P` scalars against :math:`d_c` floats for SplitFed. Checked in
      ``experiments/distributed/ho_sfl.py`` (communication slope ~0 vs 1 in :math:`d_c`, convergence
      vs :func:`fo_sfl` and :func:`zo_fl`, server-width independence, :math:`P` scaling, client
      memory) and ``tests/distributed/test_ho_sfl.py`` (unbiasedness by Monte Carlo, many
      directions -> the first-order update, a NumPy re-derivation on a linear split model,
      the ``(P,)`` aggregation payload).
    """
    per_worker = ho_sfl_worker(client_apply, server_apply, loss_fn, batch_size=batch_size,
                               num_perturbations=num_perturbations, zo_eps=zo_eps, rho=rho,
                               client_optimizer=client_optimizer,
                               server_optimizer=server_optimizer, distribution=distribution,
                               perturbation_batch=perturbation_batch, axis_name=axis_name)
    return mesh_lib.across_workers(per_worker, num_workers, mesh=mesh, axis_name=axis_name)


# --------------------------------------------------------------------------- FO-SFL (SplitFed)


def fo_sfl_worker(client_apply: Callable, server_apply: Callable, loss_fn: Callable, *,
                  batch_size: int = 32, client_optimizer=None, server_optimizer=None,
                  axis_name: str = mesh_lib.DEFAULT_AXIS) -> base.OracleAlgorithm:
    """One SplitFed client; :func:`fo_sfl` runs all clients. Arguments as in :func:`fo_sfl`."""
    batch_size, client_opt, server_opt = _check_common(
        client_apply, server_apply, loss_fn, batch_size, client_optimizer, server_optimizer,
        axis_name)

    def update(state, oracle, key):
        # the key layout of HO-SFL (same batches for the same key: paired comparisons)
        _, k_batch, _ = jax.random.split(key, 3)
        inputs, labels = oracle.sample(k_batch, batch_size)
        w_c, w_s = state.params["client"], state.params["server"]
        phi, client_vjp = jax.vjp(lambda w: client_apply(w, inputs), w_c)  # residuals kept
        loss, g_z, w_s, s_opt = _server_step(server_apply, loss_fn, server_opt, w_s,
                                             state.server_opt, phi, labels, axis_name)
        (g_c,) = client_vjp(g_z)  # client backprop with the server's cotangent
        g_c = jax.lax.pmean(g_c, axis_name)  # FedAvg of the client gradients: d_c floats
        w_c, c_opt = _apply(client_opt, g_c, state.client_opt, w_c)
        params = {"client": w_c, "server": w_s}
        grads = [(a.size, a.dtype) for a in jax.tree.leaves(g_c)]
        info = {
            "oracle_calls": jnp.asarray(1, jnp.int32),
            "bits_sent": _bits((phi.size, phi.dtype), *grads),
            "bits_received": _bits((phi.size, g_z.dtype), *grads),
            "loss": loss.astype(jnp.float32),
        }
        return base.Step(params, info), SplitState(params, c_opt, s_opt)

    return base.OracleAlgorithm(_init(client_opt, server_opt), update)


def fo_sfl(client_apply: Callable, server_apply: Callable, loss_fn: Callable, *,
           num_workers: int, batch_size: int = 32, client_optimizer=None,
           server_optimizer=None, mesh=None,
           axis_name: str = mesh_lib.DEFAULT_AXIS) -> base.OracleAlgorithm:
    r"""First-order split federated learning (SplitFed), the baseline of :func:`ho_sfl`.

    Client :math:`i` sends :math:`\phi_i`, the server steps on its loss and returns
    :math:`\lambda_i = \nabla_z\ell`; the client backpropagates it,
    :math:`g_i = J_i^\top\lambda_i`, and the clients' gradients are FedAvg-ed
    (:math:`g_c = \frac1N\sum_i g_i`, ``lax.pmean``, :math:`d_c` floats per client) before
    ``client_optimizer`` is applied. The update equals first-order training of the whole model
    on the union of the minibatches (server and client steps from the same point).

    Args:
      client_apply, server_apply, loss_fn, num_workers, batch_size, client_optimizer,
      server_optimizer, mesh, axis_name: as in :func:`ho_sfl`.

    Returns:
      An ``OracleAlgorithm`` as in :func:`ho_sfl`; ``info["oracle_calls"]`` is 1 per client (one
      split value-and-gradient), ``bits_sent`` :math:`32(Bk + d_c)` per client in float32.

    Paper mapping:
      SplitFed (Thapa et al. 2022), the spec's "FO-SFL" baseline; FedAvg of gradients after
      every round (one local step), which is FedAvg of the models from a common start.

    Theory:
      The reference rate :math:`O(1/\sqrt T)` without ZO variance; the experiment compares
      HO-SFL's loss with it.
    """
    per_worker = fo_sfl_worker(client_apply, server_apply, loss_fn, batch_size=batch_size,
                               client_optimizer=client_optimizer,
                               server_optimizer=server_optimizer, axis_name=axis_name)
    return mesh_lib.across_workers(per_worker, num_workers, mesh=mesh, axis_name=axis_name)


# --------------------------------------------------------------------------- full-model ZO FL


def zo_fl_worker(client_apply: Callable, server_apply: Callable, loss_fn: Callable, *,
                 batch_size: int = 32, num_perturbations: int = 16, zo_eps=1e-3,
                 client_optimizer=None, server_optimizer=None, distribution: str = "gaussian",
                 perturbation_batch: int | None = None,
                 axis_name: str = mesh_lib.DEFAULT_AXIS) -> base.OracleAlgorithm:
    """One full-model ZO client; :func:`zo_fl` runs all clients. Arguments as in
    :func:`zo_fl`."""
    batch_size, client_opt, server_opt = _check_common(
        client_apply, server_apply, loss_fn, batch_size, client_optimizer, server_optimizer,
        axis_name)
    num_perturbations, perturbation_batch = _check_zo(num_perturbations, zo_eps, distribution,
                                                      perturbation_batch)

    def update(state, oracle, key):
        k_seed, k_batch, k_eval = jax.random.split(key, 3)
        inputs, labels = oracle.sample(k_batch, batch_size)
        params = state.params
        ct = compute_dtype(jax.tree.leaves(params["client"])[0].dtype)

        def objective(p, key_):
            del key_
            return split_loss(client_apply, server_apply, loss_fn, p, inputs.astype(ct),
                              labels).astype(ct)

        round_key = shared_round_key(k_seed, axis_name)
        deltas = client_zo_deltas(objective, params, round_key, k_eval,
                                  num_perturbations=num_perturbations, radius=zo_eps,
                                  distribution=distribution,
                                  perturbation_batch=perturbation_batch)
        deltas = jax.lax.pmean(deltas, axis_name)
        g = zo_direction(deltas, params, round_key, distribution=distribution,
                         perturbation_batch=perturbation_batch)
        loss = jax.lax.pmean(split_loss(client_apply, server_apply, loss_fn, params, inputs,
                                        labels), axis_name)
        w_c, c_opt = _apply(client_opt, g["client"], state.client_opt, params["client"])
        w_s, s_opt = _apply(server_opt, g["server"], state.server_opt, params["server"])
        new = {"client": w_c, "server": w_s}
        info = {
            "oracle_calls": jnp.asarray(2 * num_perturbations + 1, jnp.int32),
            "bits_sent": _bits((num_perturbations, deltas.dtype)),
            "bits_received": _bits((num_perturbations, deltas.dtype), (1, jnp.float32)),
            "loss": loss.astype(jnp.float32),
        }
        return base.Step(new, info), SplitState(new, c_opt, s_opt)

    return base.OracleAlgorithm(_init(client_opt, server_opt), update)


def zo_fl(client_apply: Callable, server_apply: Callable, loss_fn: Callable, *,
          num_workers: int, batch_size: int = 32, num_perturbations: int = 16, zo_eps=1e-3,
          client_optimizer=None, server_optimizer=None, distribution: str = "gaussian",
          perturbation_batch: int | None = None, mesh=None,
          axis_name: str = mesh_lib.DEFAULT_AXIS) -> base.OracleAlgorithm:
    r"""Full-model zeroth-order federated learning (MeZO / DeComFL style), a baseline.

    With :math:`w = (w_c, w_s)` and the local loss :math:`f_i(w)` on client :math:`i`'s
    minibatch, :math:`\delta_{i,p} = [f_i(w + \epsilon u_p) - f_i(w - \epsilon u_p)]/(2\epsilon)`
    for directions :math:`u_p` of the WHOLE model from the shared round seed; the clients
    average the :math:`P` scalars and apply :math:`g = \frac cP\sum_p\bar\delta_p u_p` (client
    part with ``client_optimizer``, server part with ``server_optimizer``). No activations
    travel; the estimator's variance grows with :math:`d = d_c + d_s`.

    Args:
      As :func:`ho_sfl` (no ``rho``).

    Returns:
      An ``OracleAlgorithm`` as in :func:`ho_sfl`; ``oracle_calls`` :math:`2P + 1` per client
      (with the loss report), ``bits_sent`` :math:`32P` per client.

    Theory:
      Rate :math:`O(\sqrt{d/(PT)})`: the dimension-dependent slowdown HO-SFL avoids
      (claims 2 and 3 of ``experiments/distributed/ho_sfl.py``).
    """
    per_worker = zo_fl_worker(client_apply, server_apply, loss_fn, batch_size=batch_size,
                              num_perturbations=num_perturbations, zo_eps=zo_eps,
                              client_optimizer=client_optimizer,
                              server_optimizer=server_optimizer, distribution=distribution,
                              perturbation_batch=perturbation_batch, axis_name=axis_name)
    return mesh_lib.across_workers(per_worker, num_workers, mesh=mesh, axis_name=axis_name)

