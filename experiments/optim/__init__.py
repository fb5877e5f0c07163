"""Experiments of the optim family (gradient transformations (optax)).

One module per paper, named after its slug."""
