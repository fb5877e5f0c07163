"""Experiments of the transport family (optimal transport).

One module per paper, named after its slug."""
