"""Experiments of the robust family (robust and distributionally robust methods).

One module per paper, named after its slug."""
