"""Courses: rosters, exercise sets with release/due/close dates, late policies, extensions."""
