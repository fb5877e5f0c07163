"""Experiments of the preference family (preference learning).

One module per paper, named after its slug."""
