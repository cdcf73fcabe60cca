"""Gradebook export (CSV) for an LMS."""
