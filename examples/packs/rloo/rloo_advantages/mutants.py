"""Known mistakes of `rloo-advantages`: switches of the faulty reference (faulty.py).

`explains` lists the checks each mistake can make fail; verify holds every fault to it on
every seed, and feedback names the mistake on those checks.
"""

from exercises.mistakes import fault, fault_mutants

from .faulty import faulty_rloo_advantages

VALUES = ("values", "pairs", "one_group", "dtype_device")

FAULTS = [
    fault("baseline-includes-self", "the baseline includes the sample itself: s_i - mean(group) instead of the "
          "mean of the other answers",
          fix="Leave the answer out of its own baseline: (sum of the group - s_i) / (group_size - 1).",
          explains=VALUES, site="baseline"),
    fault("wrong-denominator", "the leave-one-out sum divided by group_size instead of group_size - 1",
          fix="The baseline averages the group_size - 1 other answers: divide by group_size - 1.",
          explains=VALUES, site="baseline"),
    fault("whole-batch-baseline", "the baseline is taken over the whole batch, not the answer's own group "
          "(other prompts' scores leak in)",
          fix="Reshape scores to [N / group_size, group_size] and take the baseline within each row.",
          explains=("values", "pairs", "dtype_device"), site="grouping"),
    fault("advantages-attached", "the advantages still carry gradient back to scores",
          fix="Compute the advantages on scores.detach() (or under torch.no_grad()): they are constants.",
          explains=("detached",), site="grad"),
]

MUTANTS = fault_mutants(faulty_rloo_advantages, FAULTS)
