"""The case descriptions a paper's test module declares in ``CONTRACT_CASES``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

NUM_STEPS = 3


class TransformationCase(NamedTuple):
    """How to build and drive one ``GradientTransformation`` in the property matrix.

    Attributes:
      name: unique case id, e.g. ``"goma"``.
      make: ``make(**kwargs) -> optax.GradientTransformation(ExtraArgs)``.
      kwargs: valid hyperparameters for ``make`` (may include a float ``learning_rate`` or
        ``step_size`` that the matrix also replaces by a schedule / injects).
      invalid: tuple of ``(kwargs_override, argument_name)``: each override must make ``make``
        raise ``ValueError`` whose message names ``argument_name``.
      extra_args: ``extra_args(loss_fn) -> dict`` of keyword oracles passed to ``update`` (e.g.
        ``{"grad_fn": ...}`` for SAM, ``{"field_fn": ...}`` for extragradient), built from the
        test's loss; ``None`` when the update needs none.
      needs_params: whether ``update`` requires ``params``.
      stochastic: whether results depend on a key given at construction (``make(key=...)``).
      lr_name: name of the learning-rate-like float argument the optax wrappers act on (``None``
        when there is none). ``make`` must also accept an optax schedule ``count -> value``
        there, evaluated at the number of updates made so far.
    """

    name: str
    make: Callable[..., Any]
    kwargs: dict
    invalid: tuple = ()
    extra_args: Callable[[Callable], dict] | None = None
    needs_params: bool = True
    stochastic: bool = False
    lr_name: str | None = "learning_rate"


class AlgorithmCase(NamedTuple):
    """How to build and drive one ``base.OracleAlgorithm`` in the property matrix.

    Attributes:
      name: unique case id.
      make: ``make(**kwargs) -> OracleAlgorithm``.
      kwargs: valid hyperparameters.
      problem: ``problem(key, dtype) -> (x0, oracle)`` small problem for the matrix. A problem
        with no bfloat16 form raises ``NotImplementedError`` for ``dtype=bfloat16`` (any other
        exception is a failure of the ``bfloat16`` check).
      invalid: as in :class:`TransformationCase`.
      stochastic: whether different keys must give different results.
      bfloat16: ``False`` skips the ``bfloat16`` check (the problem cannot be built in bf16).
      distributed: the algorithm runs workers through ``mesh.across_workers``: ``make`` then
        also accepts ``mesh=`` (``None`` simulates the workers on one device, a mesh shards them
        one per device), and the ``distributed`` check asserts that both agree. The problem's
        worker axis must equal the local device count (8 simulated CPU devices in tests).
      sweep: the float hyperparameter the ``sweep`` check passes as a traced value (``jit`` of
        a ``vmap`` over two values, the algorithm built inside): ``"auto"`` (default) takes
        the first float entry of ``kwargs``; ``None`` opts out (say why next to the case).
    """

    name: str
    make: Callable[..., Any]
    kwargs: dict
    problem: Callable[[Any, Any], tuple[Any, Any]]
    invalid: tuple = ()
    stochastic: bool = False
    bfloat16: bool = True
    distributed: bool = False
    sweep: str | None = "auto"
