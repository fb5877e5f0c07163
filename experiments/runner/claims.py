"""The claims tests' check and the claims' lines in an experiment's summary."""

from __future__ import annotations

__all__ = ["check_quick_claims", "claim_values"]


def check_quick_claims(exp, results, *, expected_failing=None, tolerate=()) -> list:
    """Checks every claim of ``exp.CLAIMS`` on ``results`` (what ``exp.run`` returned, usually
    :func:`quick_results`), as the claims tests do, and returns the
    :class:`~jaxopt_icml.theory.ClaimResult` list for further assertions.

    Raises ``AssertionError`` (the message ends with :func:`jaxopt_icml.theory.format_claims`
    of the checked claims) unless the checked names are those of ``exp.CLAIMS`` in order and
    exactly the expected claims fail: a claim that starts failing is noticed, and so is an
    expected failure that starts passing.

    Args:
      exp: an experiment module: ``CLAIMS``, and optionally ``KNOWN_FAILING`` and
        ``FULL_ONLY_FAILING``.
      results: the results the claims are evaluated on.
      expected_failing: names of the claims that must fail (compared as sorted lists). By
        default ``exp.KNOWN_FAILING`` less ``exp.FULL_ONLY_FAILING`` (the documented
        non-reproductions that also fail at QUICK size; an absent attribute counts as empty).
        ``()`` demands that every claim pass whatever the module documents.
      tolerate: names of claims whose outcome is not checked either way (wall-clock timings
        that depend on the machine); they are left out of both sides of the comparison.
    """
    from jaxopt_icml import theory

    checked = theory.check(exp.CLAIMS, results)
    table = theory.format_claims(checked)
    names = [c.name for c in checked]
    if names != [c.name for c in exp.CLAIMS]:
        raise AssertionError(f"checked claims {names} are not exp.CLAIMS in order\n{table}")
    if expected_failing is None:
        expected_failing = (set(getattr(exp, "KNOWN_FAILING", ()))
                            - set(getattr(exp, "FULL_ONLY_FAILING", ())))
    tolerate = set(tolerate)
    expected = sorted(n for n in expected_failing if n not in tolerate)
    failed = sorted(c.name for c in checked if not c.passed and c.name not in tolerate)
    if failed != expected:
        raise AssertionError(f"failing claims {failed}, expected {expected}\n{table}")
    return checked


def claim_values(claims, results) -> dict:
    """``{"claim <name>": measured value}`` for every claim, the lines an experiment's
    ``summarize`` ends with."""
    from jaxopt_icml import theory

    return {f"claim {r.name}": r.value for r in theory.check(claims, results)}
