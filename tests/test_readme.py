"""The README's promises: its example runs and its test command is the one CI runs."""

import re
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _blocks(language, text=README):
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


def _section(title):
    return README.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_exactly_two_quick_start_commands_and_ci_runs_the_test_command():
    commands = [b.strip() for b in _blocks("bash", _section("Quick start"))]
    assert len(commands) == 2, commands
    run_main, run_tests = commands
    assert "experiments run goma" in run_main
    assert "pytest" in run_tests
    ci = (ROOT / ".ci" / "run").read_text()
    assert run_tests in ci.splitlines(), "CI must run the README's test command verbatim"


def test_python_example_runs_and_shows_the_k_minus_two_rate():
    (example,) = _blocks("python")
    namespace = {}
    exec(compile(example, "README.md", "exec"), namespace)  # noqa: S102 - our own README
    ks, residual = namespace["ks"], np.asarray(namespace["residual"])
    slopes = np.polyfit(np.log(ks), np.log(residual[:, ks - 1]).T, 1)[0]
    assert np.all(slopes < -1.8), slopes
    assert np.all(np.isfinite(np.asarray(namespace["params"]["w"])))


def test_papers_table_is_generated_from_the_catalog():
    from experiments.tools import papers_table
    from jaxopt_icml import catalog

    assert papers_table.render(README) == README, "run `python -m experiments papers`"
    table = README.split(papers_table.BEGIN, 1)[1].split(papers_table.END, 1)[0]
    lines = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(lines) == 1 + len(catalog.implemented())  # header + one line per paper


def test_readme_is_short_and_has_no_lab_notes():
    """The README is for users: at most ~200 lines, no dated entries or hardware diaries
    (benchmark tables live in docs/benchmarks.md, history in git and CHANGELOG.md)."""
    lines = README.splitlines()
    assert len(lines) <= 200, len(lines)
    assert not re.search(r"20\d\d-[01]\d-[0-3]\d", README)
    for phrase in ("not understood yet", "H100", "H200", "issue "):
        assert phrase not in README, phrase
    assert max(len(line) for line in lines if not line.startswith("| ")) <= 100
    assert max(len(line) for line in lines) <= 400  # table lines: one line per paper
    assert (ROOT / "docs" / "benchmarks.md").is_file() and (ROOT / "CONTRIBUTING.md").is_file()
