"""Exercises: data plus trusted judging code. Each subpackage is one exercise."""
