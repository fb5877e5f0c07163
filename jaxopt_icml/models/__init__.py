"""Flax nnx models shared by experiments."""

from jaxopt_icml.models.mlp import MLP, abstract_params, init_params, pure_apply

__all__ = ["MLP", "abstract_params", "init_params", "pure_apply"]
