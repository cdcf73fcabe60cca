"""Exercise pairwise-loss: the Bradley-Terry loss that trains a reward model.

Fill in the `# YOUR CODE` blocks, run `python this_file.py` for the self-tests, then submit
with `ppo-submit this_file.py`.
"""

import torch
import torch.nn.functional as F


def compute_pairwise_loss(chosen_rewards, rejected_rewards, margin=None):
    """Bradley-Terry pairwise loss: mean(-logsigmoid(chosen - rejected - margin)).

    Args:
        chosen_rewards: the reward model's scores of the preferred answers, any shape
            (e.g. [B]); gradient must flow to this tensor.
        rejected_rewards: the scores of the dispreferred answers; same shape as
            chosen_rewards (a [B, 1] tensor against [B] is an error, not a broadcast);
            gradient must flow to it too.
        margin: None (no margin), a Python float, or a tensor with the rewards' shape
            (a per-pair margin, e.g. how strongly the annotator preferred the answer).
            The margin is subtracted: the chosen reward must beat the rejected one by it.

    Returns:
        A 0-dim tensor in the inputs' dtype and device: the mean over all elements.
        Must stay finite and exact for large gaps: a gap chosen - rejected of -200 gives
        a loss of 200 for that pair (log(sigmoid(x)) underflows there; use a stable form).

    Raises:
        ValueError naming the offending argument when rejected_rewards (or a tensor
        margin) does not have the shape of chosen_rewards.
    Must not modify its inputs in place.
    """
    # YOUR CODE: check the shapes of rejected_rewards and of a tensor margin

    # YOUR CODE: the logits chosen - rejected, minus the margin when there is one

    # YOUR CODE: the mean of -log(sigmoid(logits)), computed in a numerically stable way
    raise NotImplementedError("compute_pairwise_loss is not written yet")


if __name__ == "__main__":
    import math

    # equal rewards: -log(sigmoid(0)) = log 2
    loss = compute_pairwise_loss(torch.tensor([1.0, -3.0]), torch.tensor([1.0, -3.0]))
    assert torch.isclose(loss, torch.tensor(math.log(2.0))), loss
    assert loss.dim() == 0
    # a gap of +1: -log(sigmoid(1)) = log(1 + e^-1) = 0.31326
    loss = compute_pairwise_loss(torch.tensor([2.0]), torch.tensor([1.0]))
    assert torch.isclose(loss, torch.tensor(math.log1p(math.exp(-1.0)))), loss
    # the same gap with margin 1.0 is back to log 2
    loss = compute_pairwise_loss(torch.tensor([2.0]), torch.tensor([1.0]), margin=1.0)
    assert torch.isclose(loss, torch.tensor(math.log(2.0))), loss
    # a gap of -200 costs 200, not inf
    loss = compute_pairwise_loss(torch.tensor([0.0]), torch.tensor([200.0]))
    assert torch.isclose(loss, torch.tensor(200.0)), loss
    print("self-tests passed")
