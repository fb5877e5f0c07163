"""Experiments of the decision family (decision-focused and combinatorial optimization).

One module per paper, named after its slug."""
