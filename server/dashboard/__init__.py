"""The dashboard: what the class got wrong, who is stuck, and each learner's history."""
