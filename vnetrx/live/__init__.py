"""Checks against the running kernel. ``parse`` is pure; ``tap`` touches the system (root only)."""
