"""The CI budget report: stage times, per-paper costs from JUnit reports, the projection."""

from experiments.tools import ci_budget

_JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="tests.minimax.test_goma" name="test_claims_quick" time="12.5"/>
<testcase classname="tests.minimax.test_goma" name="test_numpy_reference" time="2.5"/>
<testcase classname="tests.optim.test_deva" name="test_a" time="30.0"/>
<testcase classname="tests.test_notebooks" name="test_notebook_executes[goma]" time="20.0"/>
<testcase classname="tests.test_base" name="test_run" time="99.0"/>
<testcase classname="tests.test_contract" name="test_contract[goma-jit]" time="4.0"/>
<testcase classname="tests.test_contract" name="test_contract[no_such_case-jit]" time="7.0"/>
</testsuite></testsuites>
"""


def test_paper_costs_add_notebook_and_test_file(tmp_path):
    (tmp_path / "tests.xml").write_text(_JUNIT)
    costs = ci_budget.paper_costs([tmp_path / "tests.xml"], {"goma", "deva"}, {"goma": "goma"})
    assert costs == {"goma": 39.0, "deva": 30.0}  # test_base and unknown cases are no paper's


def test_contract_cases_are_read_from_the_test_files():
    cases = ci_budget.contract_case_papers()
    assert cases["goma"] == "goma" and cases["extragradient"] == "goma"
    assert cases["deva_eigenbasis"] == "deva"  # a name given by keyword


def test_report_projects_the_mean_paper_over_the_missing_ones(tmp_path):
    from jaxopt_icml import catalog

    (tmp_path / "tests.xml").write_text(_JUNIT)
    (tmp_path / "stages.txt").write_text("install 60\ntests 600\n")
    text = ci_budget.report(tmp_path, 1000.0, workers=2)
    missing = len(catalog.papers()) - len(catalog.implemented())
    assert "install 60, tests 600" in text
    assert "slowest papers (notebook + tests, worker-seconds): goma 39, deva 30" in text
    assert f"{1000 + missing * 34.5 / 2:.0f} s" in text
    assert "total 1000 s (budget now 1200 s)" in text and "OVER" not in text.splitlines()[-1]
    assert "OVER BUDGET" in ci_budget.report(tmp_path, 1300.0, workers=2).splitlines()[-1]
