"""Monotone operators and games with known solutions, as oracle pytrees.

Every problem here is a ``flax.struct`` dataclass (a pytree of arrays), so it can be vmapped over
instances, and exposes ``operator(z, key) -> F(z)``. ``key`` is ignored by deterministic operators;
:class:`NoisyOperator` wraps a deterministic one and uses it. Exact diagnostics
(``residual_sq``, ``distance_to_solution``) never use noise.

The variable ``z`` is a 1-D array (for games, ``z = concat(x, y)``).
"""

from __future__ import annotations

import threading
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

__all__ = [
    "CountingOperator",
    "LinearOperator",
    "NoisyOperator",
    "bilinear_game",
    "monotone_linear",
    "random_orthogonal",
    "strongly_monotone_linear",
]


class LinearOperator(struct.PyTreeNode):
    """Affine operator ``F(z) = M z + c`` with ``M`` monotone (``M + M^T`` PSD).

    Attributes:
      M: ``(d, d)`` matrix.
      c: ``(d,)`` offset.
      solution: one zero of ``F`` (for bilinear games the minimum-norm one is not unique: the
        solution set is ``solution + null(M)``).
      lipschitz: ``||M||_2``.
      strong_monotonicity: ``lambda_min((M + M^T)/2)`` (0 when merely monotone).
    """

    M: jax.Array
    c: jax.Array
    solution: jax.Array
    lipschitz: jax.Array
    strong_monotonicity: jax.Array

    def operator(self, z, key=None):
        del key
        return self.M @ z + self.c

    def residual_sq(self, z):
        """``||F(z)||^2``, exact."""
        r = self.operator(z)
        return jnp.vdot(r, r)

    def project_solution(self, z):
        """Euclidean projection of ``z`` onto the solution set ``{z: M z + c = 0}``."""
        pinv = jnp.linalg.pinv(self.M)
        return z - pinv @ (self.M @ z + self.c)

    def distance_to_solution_sq(self, z):
        d = z - self.project_solution(z)
        return jnp.vdot(d, d)


class NoisyOperator(struct.PyTreeNode):
    """Unbiased stochastic operator with variance that may grow with ``||z||^2``.

    ``F~(z; xi) = (M + noise_scale * G_xi) z + c + additive_scale * e_xi`` where ``G_xi`` has i.i.d.
    ``N(0, 1/d)`` entries and ``e_xi ~ N(0, I)``. Then ``E F~ = F`` and
    ``E||F~ - F||^2 = noise_scale^2 ||z||^2 + additive_scale^2 d``: the variance is unbounded on
    ``R^d`` (the regime of GOMA's stochastic claim).
    """

    base: LinearOperator
    noise_scale: jax.Array
    additive_scale: jax.Array

    def operator(self, z, key):
        d = z.shape[0]
        k1, k2 = jax.random.split(key)
        G = jax.random.normal(k1, (d, d), z.dtype) / jnp.sqrt(jnp.asarray(d, z.dtype))
        e = jax.random.normal(k2, (d,), z.dtype)
        return self.base.operator(z) + self.noise_scale * (G @ z) + self.additive_scale * e

    def residual_sq(self, z):
        return self.base.residual_sq(z)

    def distance_to_solution_sq(self, z):
        return self.base.distance_to_solution_sq(z)


def random_orthogonal(key, n: int, dtype=jnp.float32):
    """Haar-distributed orthogonal matrix (QR of a Gaussian with sign correction).

    Note: building many problems at once with ``jit(vmap(...))`` in float64 has been seen to hang
    in jaxlib 0.10.2 on a 2-core CPU (batched QR/pinv custom calls waiting on one thread pool);
    build instances with ``jax.lax.map`` instead of ``vmap`` there.
    """
    q, r = jnp.linalg.qr(jax.random.normal(key, (n, n), dtype))
    return q * jnp.sign(jnp.diag(r))[None, :]


def bilinear_game(key, n: int, *, singular_values=None, num_zero: int = 1,
                  dtype=jnp.float32) -> LinearOperator:
    """``min_x max_y x^T A y + b^T x - c^T y`` with ``A = U diag(s) V^T``, ``x, y in R^n``.

    The operator is ``F(x, y) = (A y + b, -A^T x + c)``: monotone (skew-symmetric ``M``), not
    strongly monotone, ``L = max s``. By default ``s ~ U[0, 1]`` with the largest set to 1 and
    ``num_zero`` exact zeros, so the solution set is an affine subspace. ``b, c`` are chosen so a
    random point is a solution.
    """
    if n < 1 or not 0 <= num_zero <= n:
        raise ValueError(f"need n >= 1 and 0 <= num_zero <= n, got n={n}, num_zero={num_zero}")
    ku, kv, ks, kz = jax.random.split(key, 4)
    U = random_orthogonal(ku, n, dtype)
    V = random_orthogonal(kv, n, dtype)
    if singular_values is None:
        s = jax.random.uniform(ks, (n,), dtype)
        s = s.at[0].set(1.0)
        s = s.at[n - num_zero:].set(0.0) if num_zero else s
    else:
        s = jnp.asarray(singular_values, dtype)
    A = (U * s[None, :]) @ V.T
    zero = jnp.zeros((n, n), dtype)
    M = jnp.block([[zero, A], [-A.T, zero]])
    z_star = jax.random.normal(kz, (2 * n,), dtype)
    c = -M @ z_star
    return LinearOperator(M, c, z_star, jnp.max(jnp.abs(s)), jnp.asarray(0.0, dtype))


def _linear_from(key, d, sym_eigs, skew_scale, dtype) -> LinearOperator:
    k1, k2, k3 = jax.random.split(key, 3)
    Q = random_orthogonal(k1, d, dtype)
    S = (Q * sym_eigs[None, :]) @ Q.T
    B = jax.random.normal(k2, (d, d), dtype) / jnp.sqrt(jnp.asarray(d, dtype))
    M = S + skew_scale * (B - B.T) / 2
    z_star = jax.random.normal(k3, (d,), dtype)
    c = -M @ z_star
    return LinearOperator(M, c, z_star, jnp.linalg.norm(M, 2), jnp.min(sym_eigs))


def strongly_monotone_linear(key, d: int, *, mu: float = 0.1, skew_scale: float = 1.0,
                             dtype=jnp.float32) -> LinearOperator:
    """``F(z) = M (z - z*)`` with symmetric part eigenvalues in ``[mu, 1]`` plus a skew part."""
    if d < 1 or not mu > 0:
        raise ValueError(f"need d >= 1 and mu > 0, got d={d}, mu={mu}")
    eigs = jnp.linspace(mu, 1.0, d, dtype=dtype)
    return _linear_from(key, d, eigs, skew_scale, dtype)


def monotone_linear(key, d: int, *, rank: int | None = None, skew_scale: float = 1.0,
                    dtype=jnp.float32) -> LinearOperator:
    """Merely monotone ``F(z) = M (z - z*)``: symmetric part PSD with ``d - rank`` zero eigenvalues.

    The solution is unique when the skew part makes ``M`` nonsingular (generic), but the operator
    is not strongly monotone: ``lambda_min((M + M^T)/2) = 0``.
    """
    rank = d // 2 if rank is None else rank
    if d < 1 or not 0 <= rank <= d:
        raise ValueError(f"need d >= 1 and 0 <= rank <= d, got d={d}, rank={rank}")
    positive = jnp.linspace(0.1, 1.0, rank, dtype=dtype)
    eigs = jnp.concatenate([jnp.zeros((d - rank,), dtype), positive])
    return _linear_from(key, d, eigs, skew_scale, dtype)


class _CallCounter:
    """Host-side tally ``tag -> number of calls``, shared by every copy of a CountingOperator.

    Hashed and compared by identity (it is a static field of the pytree): a new counter means a
    new compiled program, the same counter reuses the compiled one.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self.counts: dict[int, int] = {}

    def record(self, tag) -> None:
        tag = int(np.asarray(tag))
        with self._lock:
            self.counts[tag] = self.counts.get(tag, 0) + 1


class CountingOperator(struct.PyTreeNode):
    """Wraps an operator pytree and counts, AT RUN TIME, how often ``operator`` is evaluated.

    For tests and experiments only (checking a claimed number of oracle calls per iteration):
    every ``operator(z, key)`` issues one ``jax.debug.callback(ordered=True)`` that increments a
    host-side counter under the instance's integer ``tag``. Unlike a count taken while tracing
    (``base.from_transformation``'s ``info["oracle_calls"]``), this runs each time the compiled
    program evaluates the operator, so a second call hidden in a transformation is caught.

    Semantics: under ``jit`` and ``lax.scan`` the callback runs once per evaluation per
    iteration, in program order (ordered effect); under ``vmap`` it runs once per batch element
    with that element's ``tag`` (give each seed its own tag, e.g. ``jnp.arange(seeds)``).
    Operations that re-evaluate a function (``jax.checkpoint``, ``jax.jvp`` of the operator)
    may add calls, and ``eval_shape`` adds none. Ordered effects are not supported on several
    devices at once: use it on unsharded runs (``run_seeds(..., shard=False)``). The callback
    makes a host round trip per call, so it is slow on accelerators. :meth:`calls` waits for
    pending callbacks (``jax.effects_barrier``) before reading.

    Every other attribute (``residual_sq``, ``lipschitz`` ...) is forwarded to ``base``.

    Attributes:
      base: the wrapped operator pytree (anything with ``operator(z, key)``).
      tag: int32 array identifying this instance in the counts (a leading seed axis allowed).
      counter: the host tally (static; shared by ``replace`` copies and vmapped slices).

    Example:
      >>> import jax, jax.numpy as jnp
      >>> from jaxopt_icml import problems
      >>> op = problems.CountingOperator.wrap(problems.bilinear_game(jax.random.PRNGKey(0), 2))
      >>> _ = jax.jit(lambda o, z: o.operator(o.operator(z)))(op, jnp.ones(4))
      >>> op.calls()
      array([2])
    """

    base: Any
    tag: jax.Array
    counter: _CallCounter = struct.field(pytree_node=False)

    @classmethod
    def wrap(cls, base, tag=0) -> CountingOperator:
        """Wraps ``base`` with a fresh counter; ``tag`` is an int or an int array (one per
        instance of a batched ``base``)."""
        return cls(base, jnp.asarray(tag, jnp.int32), _CallCounter())

    def operator(self, z, key=None):
        jax.debug.callback(self.counter.record, self.tag, ordered=True)
        return self.base.operator(z, key)

    def calls(self) -> np.ndarray:
        """Calls recorded so far for each tag of ``self.tag`` (same shape), after waiting for
        the pending callbacks."""
        jax.effects_barrier()
        tags = np.asarray(self.tag)
        counts = self.counter.counts
        return np.vectorize(lambda t: counts.get(int(t), 0), otypes=[np.int64])(tags)

    def reset(self) -> None:
        """Sets every count back to zero."""
        jax.effects_barrier()
        self.counter.counts.clear()

    def __getattr__(self, name):
        if name.startswith("__") or name in ("base", "tag", "counter"):
            raise AttributeError(name)
        return getattr(self.base, name)
