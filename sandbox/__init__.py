"""Runs untrusted learner code in a bubblewrap jail and returns raw outputs as data.

Knows nothing of exercises, HTTP or databases: the judge builds :class:`~sandbox.protocol.JobRequest`
objects, :class:`~sandbox.runner.SandboxPool` runs them, and the judge decides what they are worth.
"""
