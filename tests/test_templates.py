"""The templates a new paper starts from (docs/templates/, CONTRIBUTING.md section 3) work."""

import ast
import dataclasses
import importlib.util
import sys
from pathlib import Path

from experiments import runner
from jaxopt_icml import theory

TEMPLATES = Path(__file__).resolve().parents[1] / "docs" / "templates"


def _load(name):
    """The template as a module (registered in ``sys.modules``: its dataclass needs that)."""
    full = f"_template_{name}"
    spec = importlib.util.spec_from_file_location(full, TEMPLATES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[full] = module
    spec.loader.exec_module(module)
    return module


def test_experiment_template_has_the_interface_and_its_claims_hold():
    import jax

    exp = _load("experiment")
    assert all(hasattr(exp, name) for name in runner.EXPERIMENT_INTERFACE)
    cfg = dataclasses.replace(exp.QUICK, seeds=2)
    results = exp.run(cfg, jax.random.PRNGKey(0))
    checked = runner.check_quick_claims(exp, results, expected_failing=())
    assert [c.name for c in checked] == [c.name for c in exp.CLAIMS]
    summary = exp.summarize(results)
    assert all(f"claim {c.name}" in summary for c in exp.CLAIMS)
    runner.use_agg()
    figures = exp.plot(results, cfg)
    assert set(figures) == {"gap"}
    # the claims can fail: a run twice as slow as O(1/k) breaks the slope claim
    slow = {**results, "gap": {**results["gap"],
                               "my_method": results["gap"]["my_method"] ** 0.5}}
    assert not theory.check(exp.CLAIMS[:1], slow)[0].passed


def test_test_template_uses_the_fixtures_and_declares_contract_cases():
    source = (TEMPLATES / "test_paper.py").read_text()
    tree = ast.parse(source)
    names = {node.targets[0].id for node in tree.body
             if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)}
    assert "CONTRACT_CASES" in names
    claims = next(node for node in tree.body
                  if isinstance(node, ast.FunctionDef) and node.name == "test_claims_quick")
    assert [a.arg for a in claims.args.args] == ["experiment", "quick_results"]
    assert "runner.check_quick_claims(experiment, quick_results)" in source
