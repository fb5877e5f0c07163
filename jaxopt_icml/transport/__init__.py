"""Optimal transport: new methods built on ott-jax geometries, problems and solvers."""
