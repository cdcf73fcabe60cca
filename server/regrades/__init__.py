"""Regrades: which verdicts are stale, a preview graded into a set, its diff, apply or cancel."""
