"""Fake Foundation Model Stack (see ../README.md)."""
