"""Which learners handed in the same code (issue 27): engine, runs, views. Instructors only."""
