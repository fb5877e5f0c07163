"""Repository tools behind the CLI: benchmarks, the deviceless GPU compile, the notebook
generator, the catalog status view and the multi-host launcher."""
