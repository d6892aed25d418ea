"""wattsched.workload.generate: synthetic workload models."""

from wattsched.workload.generate.lublin import LublinClassParams, LublinParams, generate_lublin
from wattsched.workload.generate.m100like import M100LikeParams, generate_m100like

__all__ = ["LublinClassParams", "LublinParams", "M100LikeParams", "generate_lublin", "generate_m100like"]
