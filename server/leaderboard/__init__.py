"""Leaderboards: best score per learner per exercise (or overall), and a speed board."""
