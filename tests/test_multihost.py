"""Multi-process JAX: a distributed algorithm on a mesh spanning two CPU processes (two devices
each, connected by ``jax.distributed.initialize``) equals the same workers simulated on one
device. This runs the README's launch lines for real, on one machine."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.tools import multihost

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("case", sorted(multihost.CASES))
def test_two_processes_agree_with_simulation(case):
    out = subprocess.run(
        [sys.executable, "-m", "experiments", "multihost", "--launch", "2", "--cpu-devices", "2",
         "--case", case, "--timeout", "240"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env=dict(os.environ))
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("multihost process")]
    assert out.returncode == 0, out.stdout + out.stderr
    assert len(lines) == 2 and all(ln.endswith("(ok)") for ln in lines), out.stdout
    assert all("4 workers on 4 devices" in ln for ln in lines), out.stdout


def test_launch_rejects_nonpositive_counts(capsys):
    import argparse

    parser = argparse.ArgumentParser()
    multihost.add_arguments(parser)
    assert multihost.main(parser.parse_args(["--launch", "0"])) == 2
    assert "positive" in capsys.readouterr().err


def test_readme_launch_lines_parse():
    """Every ``python -m experiments multihost ...`` line of the README is a valid command."""
    from experiments.__main__ import build_parser

    readme = (ROOT / "README.md").read_text()
    lines = [ln.strip() for ln in readme.splitlines()
             if ln.strip().startswith("python -m experiments multihost")]
    assert len(lines) >= 4, lines
    for line in lines:
        argv = line.split()[3:]
        args = build_parser(argv).parse_args(argv)
        assert args.command == "multihost"
