r"""Heavy-tailed data sets and finite-sum problems built on them, with known solutions.

A data set :math:`\xi_1, \dots, \xi_N` is drawn i.i.d. once (the *data sampling* randomness);
an optimizer then samples indices from it (the *optimization* randomness). Two finite sums:

* :class:`FiniteSumMean`: :math:`f(x, \xi) = \tfrac12\|x - \xi\|^2`, so
  :math:`\nabla f(x, \xi) = x - \xi`, the ERM solution is the sample mean
  :math:`\hat x_N = \frac1N\sum_i\xi_i`, the population minimizer is :math:`x_\star = E\xi`
  and :math:`\mu = L = 1`;
* :class:`FiniteSumRidge`: :math:`f(x, (a, b)) = \tfrac12(a^\top x - b)^2 + \tfrac{r}{2}\|x\|^2`
  with :math:`a \sim N(0, I_d)`, :math:`b = a^\top x_{\rm true} + \epsilon`, heavy-tailed
  symmetric :math:`\epsilon`; :math:`x_\star = x_{\rm true}/(1 + r)` and the ERM solution in
  closed form.

:func:`heavy_tailed_dataset` samples Student-t (df :math:`\alpha`, exact, by Bailey's polar
method: fast on every backend) or Pareto noise, whose norms have tail index :math:`\alpha`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

__all__ = [
    "FiniteSumMean",
    "FiniteSumRidge",
    "finite_sum_problem",
    "heavy_tailed_dataset",
    "student_t",
]

_KINDS = ("student_t", "pareto")
_PROBLEMS = ("mean", "ridge")


def _check_positive_float(name, value, low=0.0):
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or not (value > low) or value != value or value == float("inf"):
        raise ValueError(f"{name} must be a finite float > {low:g}, got {value!r}")


def _check_int(name, value, low=1):
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")


def _float_dtype(dtype):
    dtype = jnp.dtype(dtype)
    if not jnp.issubdtype(dtype, jnp.floating):
        raise ValueError(f"dtype must be a floating dtype, got {dtype}")
    return dtype


# --------------------------------------------------------------------------- sampling


def _bailey(key, nu, n, dtype):
    """``(samples, valid)``: ``n`` Student-t draws from one batch of candidate pairs; the first
    ``valid`` entries are exact draws (``valid >= n`` except with probability < 1e-40)."""
    m = int(1.28 * n + 8.0 * n ** 0.5) + 64
    u = jax.random.uniform(key, (2, m), dtype, minval=-1.0, maxval=1.0)
    w = u[0] ** 2 + u[1] ** 2
    ok = (w < 1) & (w > 0)
    idx = jnp.nonzero(ok, size=n, fill_value=0)[0]
    uu, ww = u[0][idx], jnp.where(jnp.arange(n) < jnp.sum(ok), w[idx], 0.5)
    # sqrt(W^{-2/nu} - 1) = exp(a/2) sqrt(1 - exp(-a)), a = -(2/nu) log W: no overflow.
    a = -(2.0 / nu) * jnp.log(ww)
    t = uu / jnp.sqrt(ww) * jnp.sqrt(nu) * jnp.exp(0.5 * a) * jnp.sqrt(-jnp.expm1(-a))
    return t, jnp.minimum(jnp.sum(ok), n).astype(jnp.int32)


def student_t(key: jax.Array, df, shape: tuple, dtype=jnp.float32) -> jax.Array:
    r"""Exact Student-t samples with ``df`` degrees of freedom (any ``df > 0``, may be traced).

    Bailey's polar method: draw :math:`(U, V)` uniform on :math:`[-1, 1]^2`, keep the pairs with
    :math:`0 < W = U^2 + V^2 < 1` (probability :math:`\pi/4`) and return
    :math:`T = U\sqrt{\nu (W^{-2/\nu} - 1)/W}`. Enough candidate pairs are drawn at once that a
    shortfall has probability below :math:`10^{-40}`; if it happens anyway the missing entries
    are redrawn from fresh candidates (a loop that never runs otherwise), so the output is
    exact. Much faster than ``jax.random.t`` on CPU (no gamma rejection loop), and cheap to
    compile. Unbatched use is fastest: prefer ``lax.map`` over ``vmap`` for many data sets.
    """
    dtype = _float_dtype(dtype)
    n = 1
    for s in shape:
        n *= int(s)
    if n == 0:
        return jnp.zeros(shape, dtype)
    nu = jnp.asarray(df, dtype)
    k_first, k_fill = jax.random.split(key)
    t, valid = _bailey(k_first, nu, n, dtype)

    def refill(carry):
        vals, count, it = carry
        new, new_count = _bailey(jax.random.fold_in(k_fill, it), nu, n, dtype)
        # positions < count keep their draws; [count, new_count) take fresh independent ones
        vals = jnp.where(jnp.arange(n) < count, vals, new)
        return vals, jnp.maximum(count, new_count), it + 1

    t, _, _ = jax.lax.while_loop(lambda c: c[1] < n, refill, (t, valid, jnp.int32(0)))
    return t.reshape(shape)


def heavy_tailed_dataset(key: jax.Array, n: int, d: int, alpha, *, kind: str = "student_t",
                         symmetric: bool = True, loc=None, scale: float = 1.0,
                         dtype=jnp.float32) -> jax.Array:
    r"""``n`` i.i.d. points in :math:`\mathbb{R}^d` whose norms have tail index :math:`\alpha`.

    Coordinates are independent: ``kind="student_t"``: Student-t with ``df = alpha`` (symmetric;
    ``symmetric=False`` is not available for it); ``kind="pareto"``: :math:`P = U^{-1/\alpha}`
    (:math:`P(P > s) = s^{-\alpha}`, :math:`s \ge 1`), with a random sign when ``symmetric``
    and otherwise centred, :math:`P - \alpha/(\alpha - 1)` (needs :math:`\alpha > 1`). Every
    kind has mean zero (when :math:`\alpha > 1`); the result is ``loc + scale * noise``.

    Args:
      key: PRNG key.
      n: number of points, int >= 1 (static).
      d: dimension, int >= 1 (static).
      alpha: tail index > 0 (a float; may be traced for ``student_t``).
      kind: ``"student_t"`` (default) or ``"pareto"`` (static).
      symmetric: symmetric noise (default ``True``; static).
      loc: the mean (population minimizer of the mean problem), shape ``(d,)``; default 0.
      scale: noise scale > 0 (default 1).
      dtype: floating dtype of the samples (default float32).

    Returns:
      An ``(n, d)`` array.
    """
    _check_int("n", n)
    _check_int("d", d)
    if kind not in _KINDS:
        raise ValueError(f"kind must be one of {_KINDS}, got {kind!r}")
    if not isinstance(symmetric, bool):
        raise ValueError(f"symmetric must be a bool, got {symmetric!r}")
    if kind == "student_t" and not symmetric:
        raise ValueError("symmetric=False is only available for kind='pareto' (Student-t noise "
                         "is symmetric)")
    if not isinstance(alpha, jax.core.Tracer):
        _check_positive_float("alpha", alpha)
        if kind == "pareto" and not symmetric and not alpha > 1:
            raise ValueError(f"alpha must be > 1 for centred (asymmetric) Pareto noise, got "
                             f"{alpha!r}")
    elif kind == "pareto":
        raise ValueError("alpha must be a concrete float for kind='pareto'")
    _check_positive_float("scale", scale)
    dtype = _float_dtype(dtype)
    if kind == "student_t":
        noise = student_t(key, alpha, (n, d), dtype)
    else:
        k_u, k_s = jax.random.split(key)
        u = jax.random.uniform(k_u, (n, d), dtype, minval=jnp.finfo(dtype).tiny, maxval=1.0)
        p = u ** (-1.0 / alpha)
        if symmetric:
            noise = p * jax.random.rademacher(k_s, (n, d), dtype)
        else:
            noise = p - alpha / (alpha - 1.0)
    out = scale * noise
    if loc is not None:
        out = out + jnp.asarray(loc, dtype)[None]
    return out


# --------------------------------------------------------------------------- problems


def _acc_dtype():
    return jnp.dtype(jnp.float64) if jax.config.jax_enable_x64 else jnp.dtype(jnp.float32)


class FiniteSumMean(struct.PyTreeNode):
    r""":math:`F_N(x) = \frac1N\sum_i \tfrac12\|x - \xi_i\|^2` on a fixed heavy-tailed data set.

    Attributes:
      data: the points :math:`\xi_i`, shape ``(N, d)``.
      erm_solution: :math:`\hat x_N`, the sample mean (accumulated in float64 under x64).
      population_minimizer: :math:`x_\star = E\xi`, shape ``(d,)``.
      tail_index: :math:`\alpha`.
      strong_convexity, smoothness: :math:`\mu = L = 1`.
    """

    data: jax.Array
    erm_solution: jax.Array
    population_minimizer: jax.Array
    tail_index: jax.Array
    strong_convexity: jax.Array
    smoothness: jax.Array

    @property
    def num_examples(self) -> int:
        return self.data.shape[0]

    @property
    def examples(self) -> jax.Array:
        """What :func:`jaxopt_icml.optim.clipped_sgd.empirical_second_moment` maps over."""
        return self.data

    def example_value(self, x, example):
        return 0.5 * jnp.sum((x - example.astype(x.dtype)) ** 2)

    def example_grad(self, x, example):
        return x - example.astype(x.dtype)

    def sample_grad(self, x, key, batch_size: int = 1):
        """Mean gradient over ``batch_size`` indices drawn uniformly with replacement."""
        idx = jax.random.randint(key, (batch_size,), 0, self.num_examples)
        return x - jnp.mean(self.data[idx].astype(x.dtype), axis=0)

    def per_example_grads(self, x, key, batch_size: int):
        """``(batch_size, d)`` gradients at uniformly drawn indices (for per-example clipping)."""
        idx = jax.random.randint(key, (batch_size,), 0, self.num_examples)
        return x[None] - self.data[idx].astype(x.dtype)

    def value(self, x, key=None):
        del key
        dt = jnp.promote_types(x.dtype, _acc_dtype())
        diff = x.astype(dt)[None] - self.data.astype(dt)
        return (0.5 * jnp.mean(jnp.sum(diff ** 2, -1))).astype(x.dtype)

    def grad(self, x, key=None):
        del key
        return x - self.erm_solution.astype(x.dtype)

    def value_and_grad(self, x, key=None):
        return self.value(x), self.grad(x)


class FiniteSumRidge(struct.PyTreeNode):
    r"""Ridge regression :math:`\frac1N\sum_i \tfrac12(a_i^\top x - b_i)^2 + \tfrac r2\|x\|^2`.

    Attributes:
      features: :math:`a_i \sim N(0, I_d)`, shape ``(N, d)``.
      targets: :math:`b_i = a_i^\top x_{\rm true} + \epsilon_i`, shape ``(N,)``.
      reg: :math:`r > 0`.
      erm_solution: :math:`(A^\top A/N + rI)^{-1}A^\top b/N`.
      population_minimizer: :math:`x_\star = x_{\rm true}/(1 + r)` (as :math:`E aa^\top = I`).
      tail_index: :math:`\alpha` of :math:`\epsilon`.
      strong_convexity, smoothness: extreme eigenvalues of :math:`A^\top A/N + rI`.
    """

    features: jax.Array
    targets: jax.Array
    reg: jax.Array
    erm_solution: jax.Array
    population_minimizer: jax.Array
    tail_index: jax.Array
    strong_convexity: jax.Array
    smoothness: jax.Array

    @property
    def num_examples(self) -> int:
        return self.features.shape[0]

    @property
    def examples(self):
        return (self.features, self.targets)

    def example_value(self, x, example):
        a, b = example
        r = a.astype(x.dtype) @ x - b.astype(x.dtype)
        return 0.5 * r ** 2 + 0.5 * self.reg.astype(x.dtype) * jnp.sum(x ** 2)

    def example_grad(self, x, example):
        a, b = example
        a = a.astype(x.dtype)
        return a * (a @ x - b.astype(x.dtype)) + self.reg.astype(x.dtype) * x

    def sample_grad(self, x, key, batch_size: int = 1):
        idx = jax.random.randint(key, (batch_size,), 0, self.num_examples)
        grads = jax.vmap(lambda i: self.example_grad(x, (self.features[i], self.targets[i])))(idx)
        return jnp.mean(grads, axis=0)

    def per_example_grads(self, x, key, batch_size: int):
        idx = jax.random.randint(key, (batch_size,), 0, self.num_examples)
        return jax.vmap(lambda i: self.example_grad(x, (self.features[i], self.targets[i])))(idx)

    def value(self, x, key=None):
        del key
        dt = jnp.promote_types(x.dtype, _acc_dtype())
        r = self.features.astype(dt) @ x.astype(dt) - self.targets.astype(dt)
        reg = 0.5 * self.reg.astype(dt) * jnp.sum(x.astype(dt) ** 2)
        return (0.5 * jnp.mean(r ** 2) + reg).astype(x.dtype)

    def grad(self, x, key=None):
        del key
        dt = jnp.promote_types(x.dtype, _acc_dtype())
        a = self.features.astype(dt)
        r = a @ x.astype(dt) - self.targets.astype(dt)
        return (a.T @ r / self.num_examples + self.reg.astype(dt) * x.astype(dt)).astype(x.dtype)

    def value_and_grad(self, x, key=None):
        return self.value(x), self.grad(x)


def finite_sum_problem(key: jax.Array, n: int, d: int, alpha: float, *, kind: str = "mean",
                       noise: str = "student_t", symmetric: bool = True, loc=None,
                       reg: float = 0.1, dtype=jnp.float32):
    r"""A finite-sum problem on a fresh heavy-tailed data set (see :func:`heavy_tailed_dataset`).

    Args:
      key: PRNG key (data sampling).
      n, d: number of examples and dimension (static ints >= 1).
      alpha: tail index of the noise, > 1 (so that :math:`x_\star` exists).
      kind: ``"mean"`` (:class:`FiniteSumMean`, default) or ``"ridge"``
        (:class:`FiniteSumRidge`).
      noise, symmetric: the noise of :func:`heavy_tailed_dataset`.
      loc: ``"mean"``: the population mean :math:`x_\star` (default 0); ``"ridge"``:
        :math:`x_{\rm true}` (default ones).
      reg: ridge parameter :math:`r > 0` (``"ridge"`` only).
      dtype: dtype of the data (default float32); the solutions are accumulated in float64
        under x64 and stored in the data dtype's promotion with it.

    Returns:
      A :class:`FiniteSumMean` or :class:`FiniteSumRidge`.
    """
    if kind not in _PROBLEMS:
        raise ValueError(f"kind must be one of {_PROBLEMS}, got {kind!r}")
    _check_positive_float("alpha", alpha, low=1.0)
    dtype = _float_dtype(dtype)
    acc = jnp.promote_types(dtype, _acc_dtype())
    f = lambda v: jnp.asarray(v, acc)
    if kind == "mean":
        x_star = jnp.zeros((d,), acc) if loc is None else jnp.asarray(loc, acc)
        data = heavy_tailed_dataset(key, n, d, alpha, kind=noise, symmetric=symmetric,
                                    loc=x_star, dtype=dtype)
        return FiniteSumMean(data=data, erm_solution=jnp.mean(data.astype(acc), axis=0),
                             population_minimizer=x_star, tail_index=f(alpha),
                             strong_convexity=f(1.0), smoothness=f(1.0))
    _check_positive_float("reg", reg)
    k_a, k_e = jax.random.split(key)
    x_true = jnp.ones((d,), acc) if loc is None else jnp.asarray(loc, acc)
    a = jax.random.normal(k_a, (n, d), dtype)
    eps = heavy_tailed_dataset(k_e, n, 1, alpha, kind=noise, symmetric=symmetric, dtype=dtype)[:, 0]
    b = (a.astype(acc) @ x_true).astype(dtype) + eps
    gram = a.astype(acc).T @ a.astype(acc) / n + reg * jnp.eye(d, dtype=acc)
    erm = jnp.linalg.solve(gram, a.astype(acc).T @ b.astype(acc) / n)
    eig = jnp.linalg.eigvalsh(gram)
    return FiniteSumRidge(features=a, targets=b, reg=f(reg), erm_solution=erm,
                          population_minimizer=x_true / (1.0 + reg), tail_index=f(alpha),
                          strong_convexity=eig[0], smoothness=eig[-1])
