"""Experiments of the minimax family (min-max problems and variational inequalities).

One module per paper, named after its slug."""
