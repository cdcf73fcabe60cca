"""Human review of submissions: staff comments on lines, learners' review requests, their answers."""
