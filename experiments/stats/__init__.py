"""Experiments of the stats family (learning theory checked by simulation).

One module per paper, named after its slug."""
