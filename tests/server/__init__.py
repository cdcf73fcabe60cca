"""Tests of the server package."""
