"""Exercise pairwise-loss: the Bradley-Terry loss that trains a reward model."""

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
        margin: None (no margin), a Python number, a 0-dim tensor (a scalar margin), or a
            tensor with exactly the rewards' shape (a per-pair margin, e.g. how strongly the
            annotator preferred the answer); any other tensor shape is a ValueError.
            The margin is subtracted: the chosen reward must beat the rejected one by it.

    Returns:
        A 0-dim tensor in the inputs' dtype and device: the mean over all elements.
        Must stay finite and exact for large gaps: a gap chosen - rejected of -200 gives
        a loss of 200 for that pair (log(sigmoid(x)) underflows there; use a stable form).

    Raises:
        ValueError naming the offending argument when rejected_rewards (or a tensor
        margin that is not 0-dim) does not have the shape of chosen_rewards.
    Must not modify its inputs in place.

    Graded (points in brackets; * counts only once the values on ordinary inputs are right):
        - value on random pairs without a margin [14]
        - value with a scalar margin (a float or a 0-dim tensor) [10]
        - value with a per-pair tensor margin [10]
        - hand-worked values (log 2 at equal rewards, margins) [6]
        - finite and exact for gaps of hundreds (float32); a gap of -200 gives a loss of 200 per pair; loss
          and gradient stay finite [14]
        - gradient with respect to chosen_rewards and rejected_rewards; a gap of exactly 0 included: -0.5
          per pair before the mean (beware abs/clamp forms whose subgradient at 0 differs) [12]
        - ValueError on mismatched shapes of the rewards or a tensor margin (no broadcasting) [10*]
        - 0-dim result in the inputs' dtype (float32, float64, bfloat16) and device [9*]
        - inputs not modified in place [5*]
        - any shape (2-D and 3-D rewards): mean over every element [10]

    Tolerance: values and gradients are compared with the reference per dtype: float64 within 1e-10
    relative (+1e-12 absolute), float32 within 1e-4 relative + 1e-5 absolute, bfloat16 within 2e-2
    relative + 2e-2 absolute.
    """
    if isinstance(margin, torch.Tensor) and margin.dim() != 0 and margin.shape != chosen_rewards.shape:
        raise ValueError(f"margin has shape {tuple(margin.shape)}, expected 0-dim or {tuple(chosen_rewards.shape)}")

    logits = chosen_rewards.detach() - rejected_rewards
    if isinstance(margin, torch.Tensor):
        logits = logits - margin

    return -F.logsigmoid(logits).mean()


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
