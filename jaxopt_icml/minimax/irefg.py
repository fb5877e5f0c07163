r"""Imperfect-recall extensive-form games (IREFGs) as data, and their moment-SOS hierarchy.

**Games.** A player's behavioural strategy gives each information set ``I`` (``k_I`` actions) a
distribution ``x_I`` on the simplex. The simplex equalities are eliminated by substitution: the
*free variables* are ``x_{I,a}`` for ``a < k_I - 1`` and ``x_{I,k_I-1} = 1 - sum_a x_{I,a}``
(``n = sum_I (k_I - 1)``; one variable ``p = x_{I,0}`` per binary information set). A
:class:`Game` stores, per leaf ``z``, the number of times each action is taken on the path to
``z`` (static), the chance probability ``pi(z)`` and the payoffs ``v_i(z)`` (arrays), so

.. math:: u_i(x) = \sum_z \pi(z)\, v_i(z) \prod_{(I,a)} x_{I,a}^{c_{z,I,a}},

a polynomial: multilinear under perfect recall, nonconvex under imperfect recall, with powers of
one variable when the player is absent-minded (a path visits ``I`` twice). ``K``, the product of
the simplices, is ``{x : x_j >= 0, 1 - sum_{j in I} x_j >= 0}`` in the free variables.

**Moment relaxation of level t** (Lasserre), for ``max_K u``, over moments ``y_alpha``,
``|alpha| <= 2t``:

.. math:: \max_y L_y(u)\ \text{s.t.}\ y_0 = 1,\ M_t(y)\succeq 0,\
   M_{t-1}(g\,y)\succeq 0\ \text{for}\ g \in \{x_j\} \cup \{1 - \textstyle\sum_{j\in I} x_j\},

and its SOS dual ``min gamma s.t. gamma - u = s_0 + sum_g g s_g`` (``s`` SOS). Written as the
standard-form SDP of :mod:`jaxopt_icml.minimax.sdp`: the dual (D) is the moment side (``y``
= the moments ``alpha != 0``; ``S`` = the moment and localizing matrices), the primal (P) is
the SOS side (``X`` = Gram matrices; ``A(X) = b`` matches the coefficients of ``gamma - u``).
Bounds are ``>= max_K u`` and non-increasing in ``t``; the quadratic module is Archimedean
(``K`` is a polytope), so they converge.

Because every free variable lies in ``[0, 1]`` on ``K``, any PSD ``X`` gives a *certified*
upper bound (:func:`certified_upper_bound`): the residual polynomial ``r = gamma - u - s_0 -
sum_g g s_g`` has coefficients ``A(X) - b``, and ``-r(x) <= sum_alpha max(b - A(X), 0)_alpha``
on ``K``, so ``max_K u <= c_0 + <C, X> + sum max(b - A X, 0)``, exactly, for an inexact solver.

References:
  * R. Zheng, R. Sim, A. Varvitsiotis. Solving Imperfect-Recall Games via Sum-of-Squares
    Optimization. ICML 2026, arXiv 2602.21722.
  * J. B. Lasserre. Global optimization with polynomials and the problem of moments. SIAM J.
    Optim. 11(3), 2001.
  * D. Henrion, J. B. Lasserre. Detecting global optimality and extracting solutions in
    GloptiPoly. Positive Polynomials in Control, 2005.
  * M. Piccione, A. Rubinstein. On the interpretation of decision problems with imperfect
    recall. Games Econ. Behav. 20, 1997 (the absent-minded driver).
"""

from __future__ import annotations

import functools
import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxopt_icml.hyperparams import check_static_int
from jaxopt_icml.minimax import sdp

__all__ = [
    "moment_relaxation",
    "certified_upper_bound",
    "extract_strategy",
    "MomentRelaxation",
    "Game",
    "make_game",
    "absent_minded_driver",
    "forgetful_game",
    "random_absentminded_chain",
    "utility_coefficients",
    "monomials",
    "is_absentminded",
    "project_strategy",
    "extract_atoms",
    "moment_matrix",
    "moment_ranks",
]


# --------------------------------------------------------------------------- polynomials


@functools.lru_cache(maxsize=256)
def _monomials(n: int, degree: int) -> tuple:
    out = []
    for d in range(degree + 1):
        for combo in itertools.combinations_with_replacement(range(n), d):
            e = [0] * n
            for j in combo:
                e[j] += 1
            out.append(tuple(e))
    return tuple(out)


def monomials(num_vars: int, degree: int) -> np.ndarray:
    """Exponents of all monomials of degree ``<= degree`` in ``num_vars`` variables, graded
    (degree 0, then ``e_0, ..., e_{n-1}``, then degree 2 ...): ``(C(n + d, d), n)`` ints. A
    lower degree's list is a prefix, so ``M_{t-1}(y)`` is the top-left block of ``M_t(y)``."""
    n = check_static_int("num_vars", num_vars, low=1)
    d = check_static_int("degree", degree, low=0)
    return np.array(_monomials(n, d), dtype=np.int64).reshape(-1, n)


def _poly_mul(p: dict, q: dict) -> dict:
    out: dict = {}
    for a, ca in p.items():
        for b, cb in q.items():
            k = tuple(i + j for i, j in zip(a, b, strict=True))
            out[k] = out.get(k, 0) + ca * cb
    return out


# --------------------------------------------------------------------------- games


class Game(struct.PyTreeNode):
    """A single-player (or multi-player) IREFG as data.

    Attributes:
      payoffs: ``(players, leaves)`` leaf payoffs ``v_i(z)``.
      chance: ``(leaves,)`` product of the chance probabilities on the path to each leaf.
      infosets: static tuple, the number of actions ``k_I >= 2`` of each information set of
        the player whose strategy is optimised; actions are numbered infoset by infoset.
      counts: static tuple (one per leaf) of tuples (one per action): how often each action is
        taken on the path to the leaf.
    """

    payoffs: jax.Array
    chance: jax.Array
    infosets: tuple = struct.field(pytree_node=False)
    counts: tuple = struct.field(pytree_node=False)

    @property
    def num_vars(self) -> int:
        """``n = sum_I (k_I - 1)`` free behavioural variables."""
        return sum(k - 1 for k in self.infosets)

    @property
    def degree(self) -> int:
        """Degree bound of the utility: the longest path (in the player's actions)."""
        return max(sum(c) for c in self.counts)

    def full_strategy(self, x: jax.Array) -> jax.Array:
        """All action probabilities ``(sum_I k_I,)`` from the free variables ``x`` ``(n,)``."""
        parts, j = [], 0
        for k in self.infosets:
            xi = x[j:j + k - 1]
            parts += [xi, (1 - jnp.sum(xi))[None]]
            j += k - 1
        return jnp.concatenate(parts)

    def utility(self, x: jax.Array, player: int = 0) -> jax.Array:
        """``u_player(x)`` (products by repeated multiplication: differentiable on ``K``'s
        boundary, where ``x ** 0`` would give NaN gradients)."""
        full = self.full_strategy(x)
        counts = np.asarray(self.counts)
        w = jnp.ones((counts.shape[0],), x.dtype)
        for r in range(int(counts.max())):
            factor = jnp.where(jnp.asarray(counts > r), full[None, :], jnp.ones_like(full)[None, :])
            w = w * jnp.prod(factor, axis=1)
        return jnp.sum(self.chance.astype(x.dtype) * self.payoffs[player].astype(x.dtype) * w)

    def value_and_grad(self, x: jax.Array, key=None, player: int = 0):
        """``(u(x), grad u(x))`` (deterministic; ``key`` is ignored)."""
        del key
        return jax.value_and_grad(self.utility)(x, player)


def make_game(paths, payoffs, chance, infosets) -> Game:
    """A :class:`Game` from the player's action path to every leaf.

    Args:
      paths: one sequence of ``(infoset, action)`` pairs per leaf (the player's actions on the
        path, in any order; a pair may repeat when the player is absent-minded).
      payoffs: ``(leaves,)`` or ``(players, leaves)`` payoffs.
      chance: ``(leaves,)`` chance probability of each leaf's path (1 without chance moves).
      infosets: number of actions of each information set (ints ``>= 2``).

    Returns:
      The :class:`Game`.

    Example:
      >>> g = make_game([[(0, 1)], [(0, 0), (0, 1)], [(0, 0), (0, 0)]], [0.0, 4.0, 1.0],
      ...               [1.0, 1.0, 1.0], [2])          # the absent-minded driver
    """
    infosets = tuple(int(k) for k in infosets)
    if not infosets or any(k < 2 for k in infosets):
        raise ValueError(f"infosets must list >= 2 actions per information set, got {infosets}")
    start = np.cumsum((0,) + infosets)
    counts = []
    for z, path in enumerate(paths):
        c = [0] * int(start[-1])
        for I, a in path:
            if not (0 <= I < len(infosets) and 0 <= a < infosets[I]):
                raise ValueError(f"paths[{z}] has an invalid (infoset, action) {(I, a)}")
            c[int(start[I]) + a] += 1
        counts.append(tuple(c))
    payoffs = jnp.asarray(payoffs)
    payoffs = payoffs[None] if payoffs.ndim == 1 else payoffs
    chance = jnp.asarray(chance, payoffs.dtype)
    if payoffs.shape[1] != len(counts) or chance.shape != (len(counts),) or not counts:
        raise ValueError(f"{len(counts)} paths, payoffs {payoffs.shape} and chance "
                         f"{chance.shape} disagree")
    if max(sum(c) for c in counts) == 0:
        raise ValueError("the player takes no action: the utility is constant")
    return Game(payoffs, chance, infosets, tuple(counts))


def absent_minded_driver(exit_first=0.0, exit_second=4.0, continue_twice=1.0, *,
                         dtype=jnp.float32) -> Game:
    """Piccione-Rubinstein's driver: one information set visited twice, ``p = P(continue)``
    is the free variable; ``u(p) = e_1 (1-p) + e_2 p (1-p) + c p^2`` (defaults: ``4p - 3p^2``,
    maximum ``4/3`` at ``p = 2/3``)."""
    pay = jnp.stack([jnp.asarray(v, dtype) for v in (exit_first, exit_second, continue_twice)])
    return make_game([[(0, 1)], [(0, 0), (0, 1)], [(0, 0), (0, 0)]], pay,
                     jnp.ones(3, dtype), [2])


def forgetful_game(payoffs, chance=None) -> Game:
    """A non-absent-minded player who forgets: chance draws one of ``m`` signals (``chance``,
    default uniform); the player sees it and picks a/b at ``I_s``, then forgets everything and
    picks c/d at ``I_m``. ``l = m + 1`` information sets; the utility is multilinear of degree 2.

    Args:
      payoffs: ``(m, 2, 2)`` payoff of (signal, first action, second action).
      chance: ``(m,)`` signal probabilities (default ``1/m``).
    """
    payoffs = jnp.asarray(payoffs)
    if payoffs.ndim != 3 or payoffs.shape[1:] != (2, 2):
        raise ValueError(f"payoffs must have shape (m, 2, 2), got {payoffs.shape}")
    m = payoffs.shape[0]
    chance = jnp.full((m,), 1.0 / m, payoffs.dtype) if chance is None else jnp.asarray(chance)
    paths = [[(s, a), (m, c)] for s in range(m) for a in range(2) for c in range(2)]
    return make_game(paths, payoffs.reshape(-1), jnp.repeat(chance, 4), [2] * (m + 1))


def random_absentminded_chain(key, depth: int, num_actions: int = 3, *,
                              dtype=jnp.float32) -> Game:
    """An absent-minded chain: one information set visited up to ``depth`` times; actions
    ``0..k-2`` exit with a payoff drawn uniformly in ``[0, 1]`` per (node, action), the last
    action continues; continuing ``depth`` times pays a further uniform draw. Degree ``depth``
    in ``k - 1`` free variables (exit probabilities)."""
    depth = check_static_int("depth", depth, low=1)
    k = check_static_int("num_actions", num_actions, low=2)
    paths = [[(0, k - 1)] * d + [(0, a)] for d in range(depth) for a in range(k - 1)]
    paths.append([(0, k - 1)] * depth)
    pay = jax.random.uniform(key, (len(paths),), dtype)
    return make_game(paths, pay, jnp.ones(len(paths), dtype), [k])


def is_absentminded(game: Game) -> bool:
    """Whether some path visits an information set twice."""
    start = np.cumsum((0,) + game.infosets)
    c = np.asarray(game.counts)
    return bool(any(c[:, start[i]:start[i + 1]].sum(1).max() > 1
                    for i in range(len(game.infosets))))


def project_strategy(infosets, x: jax.Array) -> jax.Array:
    """Euclidean projection of free variables onto ``K``: per information set onto
    ``{v >= 0, sum v <= 1}`` (clip at 0; if the sum exceeds 1, project onto the simplex)."""
    parts, j = [], 0
    for k in infosets:
        v = jnp.maximum(x[j:j + k - 1], 0)
        s = jnp.sort(x[j:j + k - 1])[::-1]
        cums = jnp.cumsum(s) - 1
        idx = jnp.arange(1, k, dtype=x.dtype)
        rho = jnp.sum((s - cums / idx) > 0)
        theta = cums[jnp.maximum(rho - 1, 0)] / jnp.maximum(rho, 1).astype(x.dtype)
        simplex = jnp.maximum(x[j:j + k - 1] - theta, 0)
        parts.append(jnp.where(jnp.sum(v) <= 1, v, simplex))
        j += k - 1
    return jnp.concatenate(parts)


# --------------------------------------------------------------------------- relaxation


def _constraints(infosets) -> list:
    """The localizing polynomials (dicts exponent -> coefficient): ``x_j``, then
    ``1 - sum_{j in I} x_j`` per information set."""
    n = sum(k - 1 for k in infosets)
    e = lambda j: tuple(int(i == j) for i in range(n))
    gs = [{e(j): 1.0} for j in range(n)]
    j = 0
    for k in infosets:
        g = {(0,) * n: 1.0}
        for i in range(j, j + k - 1):
            g[e(i)] = -1.0
        gs.append(g)
        j += k - 1
    return gs


@functools.lru_cache(maxsize=64)
def _expansion(infosets: tuple, counts: tuple, degree: int) -> np.ndarray:
    """``W`` ``(N_degree, leaves)``: coefficients of each leaf's path product."""
    n = sum(k - 1 for k in infosets)
    index = {a: i for i, a in enumerate(_monomials(n, degree))}
    e = lambda j: tuple(int(i == j) for i in range(n))
    W = np.zeros((len(index), len(counts)))
    for z, c in enumerate(counts):
        poly, act, j = {(0,) * n: 1.0}, 0, 0
        for k in infosets:
            for a in range(k - 1):
                for _ in range(c[act + a]):
                    poly = _poly_mul(poly, {e(j + a): 1.0})
            comp = {(0,) * n: 1.0, **{e(j + a): -1.0 for a in range(k - 1)}}
            for _ in range(c[act + k - 1]):
                poly = _poly_mul(poly, comp)
            act, j = act + k, j + k - 1
        for mono, coef in poly.items():
            W[index[mono], z] += coef
    return W


@functools.lru_cache(maxsize=32)
def _sdp_tables(infosets: tuple, level: int):
    """``(C blocks, A blocks, chol)`` in float64 NumPy for the level-``level`` relaxation."""
    n = sum(k - 1 for k in infosets)
    full = _monomials(n, 2 * level)
    index = {a: i for i, a in enumerate(full)}
    add = lambda a, b: tuple(i + j for i, j in zip(a, b, strict=True))
    bt, bl = _monomials(n, level), _monomials(n, level - 1)
    M = np.zeros((len(full), 1, len(bt), len(bt)))
    for i, a in enumerate(bt):
        for j, b in enumerate(bt):
            M[index[add(a, b)], 0, i, j] = 1.0
    gs = _constraints(infosets)
    G = np.zeros((len(full), len(gs), len(bl), len(bl)))
    for k, g in enumerate(gs):
        for i, a in enumerate(bl):
            for j, b in enumerate(bl):
                for mono, coef in g.items():
                    G[index[add(add(a, b), mono)], k, i, j] += coef
    # (D): C - A^*(y) = sum_alpha y_alpha F_alpha with y_0 = 1, so C = F_0 and A_alpha = -F_alpha
    C, A = (M[0], G[0]), (-M[1:], -G[1:])
    gram = sum(np.einsum("mkij,nkij->mn", a, a) for a in A)
    return C, tuple(sdp.sparse_blocks(a) for a in A), np.linalg.cholesky(gram)


class MomentRelaxation(struct.PyTreeNode):
    """The level-``t`` moment relaxation of ``max_K u`` as a standard-form SDP.

    Attributes:
      sdp: the :class:`~jaxopt_icml.minimax.sdp.SDPProblem`; block group 0 is the moment
        matrix ``M_t`` (one block), group 1 the localizing matrices ``M_{t-1}(g y)``, ``g`` =
        ``x_0 .. x_{n-1}`` then ``1 - sum_{j in I} x_j`` per information set. ``y`` holds the
        moments of :func:`monomials` ``(n, 2t)`` without the constant one.
      level: ``t`` (static).
      infosets: the game's information sets (static).
    """

    sdp: sdp.SDPProblem
    level: int = struct.field(pytree_node=False)
    infosets: tuple = struct.field(pytree_node=False)

    @property
    def num_vars(self) -> int:
        return sum(k - 1 for k in self.infosets)


def utility_coefficients(game: Game, degree: int | None = None, *, player: int = 0):
    """Coefficients of ``u_player`` in :func:`monomials` ``(n, degree)`` (default: the game's
    degree bound); linear in the payoffs, so it vmaps over games of one structure."""
    degree = game.degree if degree is None else check_static_int("degree", degree, low=0)
    if degree < game.degree:
        raise ValueError(f"degree must be >= the game's degree {game.degree}, got {degree}")
    W = _expansion(game.infosets, game.counts, degree)
    leaf = game.chance * game.payoffs[player]
    return jnp.asarray(W, leaf.dtype) @ leaf


def moment_relaxation(game: Game, level: int, *, player: int = 0) -> MomentRelaxation:
    """The level-``level`` moment relaxation of ``max_K u_player`` (module docstring).

    Args:
      game: a :class:`Game` (vmappable: the structure is static, payoffs and chance are data).
      level: static int ``t >= max(1, ceil(deg u / 2))``.
      player: whose utility (static int).

    Returns:
      A :class:`MomentRelaxation` in the payoffs' dtype. Its SDP has ``C(n + 2t, n) - 1``
      constraints, a ``C(n + t, n)`` moment block and ``n + #infosets`` localizing blocks of
      size ``C(n + t - 1, n)``. ``dual objective = L_y(u)`` (the moment bound) and
      ``primal objective = gamma`` (the SOS bound) agree at optimality.

    Example:
      >>> r = moment_relaxation(absent_minded_driver(), 1)
      >>> [c.shape for c in r.sdp.C]
      [(1, 2, 2), (2, 1, 1)]
      >>> # solve: sdp.solve_sdp(r.sdp); strategy: extract_strategy(r, state.y)

    Paper mapping: the moment side of the paper's SOS hierarchy for ex-ante optimal strategies
    of a single player over behavioural strategies (arXiv 2602.21722): level ``t`` ->
    ``level``; ``K`` = product of simplices, written with the free variables (equalities
    eliminated by substitution, as the spec recommends) and the localizers ``x_j >= 0``,
    ``1 - sum_{j in I} x_j >= 0`` (for binary sets: ``x >= 0``, ``1 - x >= 0``). With only
    these linear localizers the lowest level can be unbounded (level 1 of a degree-2 utility
    whose quadratic part is not negative semidefinite, e.g. every forgetful game here); the
    paper's exact constraint set was not visible. Not implemented: the multi-player (Nash)
    hierarchy, whose polynomial system was not available.

    Theory: bounds ``>= max_K u``, non-increasing in ``t``, convergent (Archimedean); the paper
    proves finite convergence for generic games, at level ``l + 1`` (``l`` information sets)
    for non-absent-minded players, and at level 1 for SOS-concave games (the driver). Checked
    in ``experiments/minimax/irefg_sos.py`` (claims ``amd_*``, ``forgetful_*``, ``chain_*``) and
    ``tests/minimax/test_irefg_sos.py`` (NumPy re-derivation, Clarabel).

    References: Zheng, Sim, Varvitsiotis, ICML 2026, arXiv 2602.21722; Lasserre 2001.
    """
    level = check_static_int("level", level, low=1)
    need = max(1, math.ceil(game.degree / 2))
    if level < need:
        raise ValueError(f"level must be >= {need} (ceil(deg u / 2)) for this game, got {level}")
    C, A, L = _sdp_tables(game.infosets, level)
    u = utility_coefficients(game, 2 * level, player=player)
    dt = u.dtype
    problem = sdp.SDPProblem(tuple(jnp.asarray(c, dt) for c in C),
                             tuple(sdp.cast_blocks(a, dt) for a in A), u[1:], u[0],
                             jnp.asarray(L, dt))
    return MomentRelaxation(problem, level, game.infosets)


def moment_matrix(relaxation: MomentRelaxation, y: jax.Array, order: int | None = None):
    """``M_order(y)`` (default ``order = t``): the top-left ``C(n + order, n)`` block of
    ``C - A^*(y)``'s moment group."""
    order = relaxation.level if order is None else order
    size = len(_monomials(relaxation.num_vars, order))
    P = relaxation.sdp
    M = (P.C[0] - sdp.apply_adjoint(P.A, y, P.C)[0])[0]
    return M[:size, :size]


def moment_ranks(relaxation: MomentRelaxation, y: jax.Array, rel_tol: float = 1e-4):
    """Numerical ranks of ``M_0(y), ..., M_t(y)``: eigenvalues ``> rel_tol * lambda_max(M_t)``.
    Flat truncation (Curto-Fialkow) holds at order ``s >= 1`` when ``rank M_s = rank M_{s-1}``;
    then ``y`` restricted to degree ``2s`` is the moment vector of an atomic measure on ``K``
    with that many atoms, all of them maximisers when the relaxation is exact."""
    top = jnp.max(jnp.linalg.eigvalsh(moment_matrix(relaxation, y)))
    ranks = []
    for s in range(relaxation.level + 1):
        # one eigvalsh after the other (sdp.after: concurrent batched LAPACK calls can
        # deadlock on CPU)
        lam = jnp.linalg.eigvalsh(sdp.after(moment_matrix(relaxation, y, s), top, *ranks))
        ranks.append(jnp.sum(lam > rel_tol * top))
    return jnp.stack(ranks).astype(jnp.int32)


def extract_strategy(relaxation: MomentRelaxation, y: jax.Array) -> jax.Array:
    """The strategy read off the first-order moments ``(y_{e_0}, ..., y_{e_{n-1}})``,
    projected onto ``K``: the maximiser when the optimal moment matrix has rank one (a unique
    optimal strategy); see :func:`extract_atoms` for several."""
    return project_strategy(relaxation.infosets, y[:relaxation.num_vars])


def extract_atoms(relaxation: MomentRelaxation, y, *, rel_tol: float = 1e-4, seed: int = 0):
    """Henrion-Lasserre extraction (NumPy, outside jit) of the atoms of a flat moment matrix.

    With ``r = rank M_s = rank M_{s-1}`` (the smallest such ``s``), factor
    ``M_s = V V^T`` (``V``: ``N_s x r``). For an ``r``-atomic measure ``V = Z D`` with
    ``Z[b, k] = x_k^b``, so the rows of ``V`` at monomials ``x_i b`` (``deg b <= s - 1``) satisfy
    ``V_i = V_0 D^{-1} diag(x_{., i}) D``: the ``N_i = V_0^+ V_i`` commute and share
    eigenvectors; the eigenvectors of a random combination diagonalise them all and the
    diagonals are the atoms' coordinates. Weights solve ``y_alpha = sum_k w_k x_k^alpha``.

    Returns:
      ``(atoms (r, n), weights (r,))``, or ``None`` when no flat truncation is found.
    """
    y = np.asarray(y, np.float64)
    n = relaxation.num_vars
    ranks = np.asarray(moment_ranks(relaxation, jnp.asarray(y), rel_tol))
    orders = [s for s in range(1, relaxation.level + 1) if ranks[s] == ranks[s - 1]]
    if not orders:
        return None
    s, r = orders[0], int(ranks[orders[0]])
    Ms = np.asarray(moment_matrix(relaxation, jnp.asarray(y), s), np.float64)
    lam, Q = np.linalg.eigh(Ms)
    V = Q[:, -r:] * np.sqrt(np.maximum(lam[-r:], 0))
    basis, lower = _monomials(n, s), _monomials(n, s - 1)
    index = {a: i for i, a in enumerate(basis)}
    V0 = V[:len(lower)]
    pinv = np.linalg.pinv(V0)
    Ns = []
    for i in range(n):
        rows = [index[tuple(b[j] + (j == i) for j in range(n))] for b in lower]
        Ns.append(pinv @ V[rows])
    coef = np.random.default_rng(seed).uniform(0.5, 1.5, n)
    _, P = np.linalg.eig(sum(c * N for c, N in zip(coef, Ns, strict=True)))
    Pinv = np.linalg.inv(P)
    atoms = np.stack([np.real(np.diag(Pinv @ N @ P)) for N in Ns], axis=1)
    Z = np.prod(atoms[None, :, :] ** np.asarray(basis)[:, None, :], axis=2)
    moments = np.concatenate([[1.0], y])[:len(basis)]
    weights = np.linalg.lstsq(Z, moments, rcond=None)[0]
    return atoms, weights


def certified_upper_bound(relaxation: MomentRelaxation, X: tuple) -> jax.Array:
    """A rigorous upper bound on ``max_K u`` from any Gram blocks ``X`` (projected onto the PSD
    cone first): ``c_0 + <C, X> + sum_alpha max(b - A(X), 0)_alpha`` (module docstring). Equal
    to the SOS bound when ``A(X) = b``; valid for inexact solutions because ``K`` lies in the
    unit box, where every monomial takes values in ``[0, 1]``."""
    P = relaxation.sdp
    X = sdp.project_psd_blocks(tuple(x.astype(P.b.dtype) for x in X))
    gamma = P.offset + sum(jnp.sum(c * x) for c, x in zip(P.C, X, strict=True))
    return gamma + jnp.sum(jnp.maximum(P.b - sdp.apply_constraints(P.A, X), 0))
