"""Benchmarks of the ``optim`` family's optimizers against their optax counterparts.

Each benchmark times one jitted training step ``(params, state) <- step(params, state)`` of
method A and of its reference B on the same pytree, interleaved
(:func:`experiments.tools.bench.interleaved_ratio`), and reports the median of the per-round ratios
time(A) / time(B). The gradient is formed inside the step (``g = 0.01 * p``, the same cheap
elementwise map for both), as in a real loop where it comes out of the same program; with
``--grad-input`` it is passed in instead, materialized as a backward pass ending in matmuls
produces it (which matters for XLA's copies when the step is donated, ``--donate``).

* ``m_plus_adam_vs_adam``: M+Adam (state in bf16, as in the paper) vs ``optax.adam``, float32
  params; ``..._f32_state``: the same with float32 states; ``..._bf16``: bf16 params for both;
* ``deva_linf_vs_adam``: DeVA's vector form vs ``optax.adam``;
* ``deva_schatten_vs_muon``: DeVA's matrix form (no eigenbasis; Newton-Schulz as Muon) vs
  ``optax.contrib.muon`` on a pytree of large matrices;
* ``clipped_sgd_vs_optax_chain``: clipped SGD vs ``chain(clip_by_global_norm, sgd)``;
* ``delay_vs_inner``: ``one_step_delay(adamw)`` vs ``adamw``; ``delay_bf16_stash_vs_inner``: the
  same with the stale gradient stored in bf16 (``stash_dtype``), half the extra traffic;
  ``delayed_adamw_vs_adamw``: the same delayed iterates from :func:`delayed_adamw`, whose
  moments absorb the stale gradient one call early (no stash, AdamW's own traffic).

The elementwise benchmarks use the 10M-parameter pytree of :mod:`experiments.tools.bench` (a
5M vector, a 2500 x 1000 matrix and a 2.5M bias); the matrix benchmark a pytree of
``1024 x 1024`` matrices (and a vector), 10M parameters in all, with fewer rounds
(Newton-Schulz dominates there).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

TARGETS = {
    "m_plus_adam_vs_adam": ("<=", 1.3),
    "m_plus_adam_f32_state_vs_adam": ("<=", 1.3),
    "m_plus_adam_vs_adam_bf16": ("<=", 1.3),
    "deva_linf_vs_adam": ("<=", 1.3),
    "deva_schatten_vs_muon": ("<=", 1.2),
    "clipped_sgd_vs_optax_chain": ("<=", 1.2),
    "delay_vs_inner": ("<=", 1.2),
    "delay_bf16_stash_vs_inner": ("<=", 1.2),
    "delayed_adamw_vs_adamw": ("<=", 1.2),
}


# How a benchmark step runs: (donate, grad_input) for :func:`stepper` (``bench --modes`` and
# ``gpu-compile``)
MODES = {"plain": (False, False), "donated": (True, False), "grad-input": (False, True),
         "donated-grad-input": (True, True)}


def _fake_grad(params):
    return jax.tree.map(lambda x: (0.01 * x.astype(jnp.float32)).astype(x.dtype), params)


def step_fn(tx, *, donate: bool = False) -> Callable:
    """The jitted training step ``(p, s[, g]) -> (p, s)`` the benchmarks time: ``g = 0.01 p``
    formed inside unless passed in; ``donate=True`` donates ``p`` and ``s``."""

    @functools.partial(jax.jit, donate_argnums=(0, 1) if donate else ())
    def step(p, s, g=None):
        if g is None:
            g = _fake_grad(p)
        u, s = tx.update(g, s, p)
        return optax.apply_updates(p, u), s

    return step


def stepper(tx, params, *, donate: bool = False,
            grad_input: bool = False) -> Callable[[], object]:
    """A no-argument callable that advances ``(params, state)`` by one jitted step of ``tx``.

    With ``donate=True`` parameters and state are donated, as in a training loop that updates
    in place. Off by default: under donation XLA:CPU (0.10-0.11) inserts copies of the one-step
    delay's gradient stash and of ``delayed_adamw``'s moments (a loop reads the old buffer
    while another overwrites it), which measures XLA's copy insertion rather than the
    optimizers' traffic (XLA:GPU's step of either has no such copies); the GPU numbers of both
    modes are in the README's benchmark notes.

    By default the gradient ``0.01 p`` is formed inside the step, so XLA fuses it into the
    update's loops. ``grad_input=True`` passes it in as an argument instead (computed once,
    not donated): a materialized gradient, as a backward pass ending in matmuls produces it.
    Under donation this matters: a gradient fused from ``p`` makes every loop that writes a
    state buffer read the old ``p``, while the loop writing ``p`` reads the old state, and
    XLA must copy one side."""
    step = step_fn(tx, donate=donate)
    fresh = jax.tree.map(jnp.copy, params)
    carry = [fresh, tx.init(fresh)]
    extra = (_fake_grad(params),) if grad_input else ()

    def call():
        carry[0], carry[1] = step(carry[0], carry[1], *extra)
        return carry[0]

    return call


def matrix_pytree(num_params: int, key, side: int = 1024) -> dict:
    """Matrices of ``side x side`` plus one vector holding the remainder, ``num_params`` in all."""
    count = max(1, num_params // (side * side))
    keys = jax.random.split(key, count + 1)
    tree = {f"w{i}": jax.random.normal(keys[i], (side, side)) / side ** 0.5
            for i in range(count)}
    rest = num_params - count * side * side
    if rest > 0:
        tree["bias"] = jax.random.normal(keys[-1], (rest,))
    return tree


class Pair(NamedTuple):
    """One benchmark: method ``a`` against its reference ``b`` on ``tree``; ``matrix`` marks
    the Newton-Schulz benchmark (fewer rounds, one call per round)."""

    name: str
    a: Any
    b: Any
    tree: Any
    note: str = ""
    matrix: bool = False


def pairs(*, big_pytree: Callable, num_params: int, matrix_side: int) -> list[Pair]:
    """The optimizer benchmarks of :data:`TARGETS`, in order (shared by the timed runs and
    :mod:`experiments.tools.gpu_compile`)."""
    from jaxopt_icml.optim import (
        clipped_sgd,
        delayed_adamw,
        deva,
        deva_linf,
        m_plus_adam,
        one_step_delay,
    )

    params = big_pytree(num_params, jax.random.PRNGKey(0))
    params_bf16 = jax.tree.map(lambda x: x.astype(jnp.bfloat16), params)
    mats = matrix_pytree(num_params, jax.random.PRNGKey(1), matrix_side)
    lr = 1e-3
    return [
        # M+Adam keeps two Adam moment pairs (additive and multiplicative paths): in float32
        # that is 4 state buffers against Adam's 2; the paper's setting stores them in bf16.
        Pair("m_plus_adam_vs_adam", m_plus_adam(lr, lr, state_dtype=jnp.bfloat16),
             optax.adam(lr), params, "float32 params; M+Adam state in bf16, Adam's in float32"),
        Pair("m_plus_adam_f32_state_vs_adam", m_plus_adam(lr, lr), optax.adam(lr), params,
             "float32 params and states (context)"),
        Pair("m_plus_adam_vs_adam_bf16", m_plus_adam(lr, lr, state_dtype=jnp.bfloat16),
             optax.adam(lr), params_bf16, "bf16 params and states for both"),
        Pair("deva_linf_vs_adam", deva_linf(lr), optax.adam(lr), params),
        # deva routes matrices to the Schatten form and vectors to the l_inf form, as muon
        # routes vectors to AdamW; without the SOAP eigenbasis both do 5 Newton-Schulz steps
        # per matrix.
        Pair("deva_schatten_vs_muon", deva(lr, use_eigenbasis=False), optax.contrib.muon(lr),
             mats, f"{matrix_side}x{matrix_side} matrices + one vector; use_eigenbasis=False",
             matrix=True),
        Pair("clipped_sgd_vs_optax_chain", clipped_sgd(lr, 1.0),
             optax.chain(optax.clip_by_global_norm(1.0), optax.sgd(lr)), params),
        Pair("delay_vs_inner", one_step_delay(optax.adamw(lr)), optax.adamw(lr), params),
        Pair("delay_bf16_stash_vs_inner",
             one_step_delay(optax.adamw(lr), stash_dtype=jnp.bfloat16), optax.adamw(lr),
             params, "stale gradient stored in bf16 (float32 params)"),
        Pair("delayed_adamw_vs_adamw", delayed_adamw(lr), optax.adamw(lr), params,
             "exact one-step-delayed AdamW, moments one gradient ahead (no stash)"),
    ]


def run_benchmarks(*, big_pytree: Callable, ratio: Callable, num_params: int,
                   matrix_side: int, repeats: int, inner: int, donate: bool = False,
                   grad_input: bool = False, only=None) -> dict:
    """The optimizer benchmarks (all, or the names in ``only``); ``big_pytree(num_params,
    key)`` and ``ratio(a, b, repeats=, inner=)`` come from :mod:`experiments.tools.bench`;
    ``donate`` and ``grad_input`` as in :func:`stepper`."""
    out = {}
    mode = dict(donate=donate, grad_input=grad_input)
    for pair in pairs(big_pytree=big_pytree, num_params=num_params, matrix_side=matrix_side):
        if only is not None and pair.name not in only:
            continue
        rounds, calls = (max(3, repeats // 2), 1) if pair.matrix else (repeats, inner)
        row = ratio(stepper(pair.a, pair.tree, **mode), stepper(pair.b, pair.tree, **mode),
                    repeats=rounds, inner=calls)
        row["num_params"] = int(sum(x.size for x in jax.tree.leaves(pair.tree)))
        row["note"] = pair.note
        out[pair.name] = row
    return out
