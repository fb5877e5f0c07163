"""Experiments of the training family (training methods: modules and schedules).

One module per paper, named after its slug."""
