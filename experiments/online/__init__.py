"""Experiments of the online family (bandits, online learning and streaming).

One module per paper, named after its slug."""
