"""Experiments of the systems family (simulators and policies).

One module per paper, named after its slug."""
