"""Zeroth-order methods from ICML 2026 papers (family ``zeroth_order``).

One module per paper; this package re-exports their public functions and state types.
"""
