"""Submissions: accept a learner's file, hand its id to the queue, report the verdict."""
