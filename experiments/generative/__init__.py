"""Experiments of the generative family (generative models, samplers and inverse problems).

One module per paper, named after its slug."""
