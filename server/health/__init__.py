"""Liveness and queue depth, no authentication."""
