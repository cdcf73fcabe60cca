"""The exercise catalogue, read from ``exercises.registry``."""
