"""Experiments: one module per paper (``experiments/<family>/<slug>.py``) on the shared
runner (``experiments/runner/``), the repository tools (``experiments/tools/``) and the command
line.

Every experiment module defines ``SLUG`` and ``TITLE`` (``runner.paper(__name__)``), a frozen
``Config`` with ``QUICK`` and ``FULL`` presets, ``make_problem``, ``make_methods``, ``run``,
``summarize``, ``plot`` and ``CLAIMS``, and a markdown module docstring (problem, update
equations, claims) that also opens its Colab notebook. See ``python -m experiments --help``.
"""
