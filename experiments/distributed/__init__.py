"""Experiments of the distributed family (federated, decentralized and compressed methods).

One module per paper, named after its slug."""
