"""Per-exercise statistics for instructors: where the class is stuck."""
