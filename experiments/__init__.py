"""Experiments: one module per paper (``experiments/<slug>.py``) and the command line.

Every experiment module defines ``SLUG``, ``TITLE``, a frozen ``Config`` with ``QUICK`` and
``FULL`` presets, ``make_problem``, ``make_methods``, ``run``, ``summarize``, ``plot`` and
``CLAIMS``, and a markdown module docstring (problem, update equations, claims) that also opens
its Colab notebook. See ``python -m experiments --help``.
"""
