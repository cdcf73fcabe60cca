"""The exercise catalog, read from ``exercises.registry``."""
