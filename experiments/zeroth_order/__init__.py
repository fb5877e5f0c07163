"""Experiments of the zeroth_order family (zeroth-order estimators and loops).

One module per paper, named after its slug."""
