"""Fake fms-model-optimizer (see ../README.md)."""
