"""wattsched.workload.generate: synthetic workload models."""

from wattsched.workload.generate.lublin import LublinClassParams, LublinParams, generate_lublin

__all__ = ["LublinClassParams", "LublinParams", "generate_lublin"]
