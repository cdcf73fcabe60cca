"""Exercise rloo-advantages: RLOO leave-one-out advantages.

Fill in the `# YOUR CODE` blocks, run `python this_file.py` for the self-tests, then submit
with `ppo-submit this_file.py`.
"""

import torch


def compute_rloo_advantages(scores, group_size):
    """REINFORCE leave-one-out advantages for groups of answers to the same prompt.

    Args:
        scores: [N] reward-model scores; consecutive groups of group_size answers belong to one
            prompt (answers 0..k-1 to the first prompt, k..2k-1 to the second, ...).
        group_size: k, the answers sampled per prompt (an integer of at least 2).

    Conventions:
        Each answer's baseline is the mean score of the *other* k - 1 answers of its group,
        never including the answer itself:
        A_i = s_i - (sum of the group - s_i) / (k - 1).
        The baseline comes from the answer's own group only. Within a group the advantages
        sum to 0.

    Returns:
        [N] advantages, detached (no gradient flows back to scores), in the scores' dtype and
        on their device.

    Raises:
        ValueError when scores is not 1-D, group_size < 2, or N is not a multiple of
        group_size.
    Must not modify its inputs in place.

    Graded (points in brackets; * counts only once the values on ordinary inputs are right):
        - leave-one-out advantages on random groups of 3, 4 and 8 [35]
        - groups of 2: each advantage is s_i - s_j [15]
        - a single group (N = group_size) [10]
        - ValueError for N not a multiple of group_size, group_size < 2, scores not 1-D [10*]
        - advantages in the scores' dtype (float32, float64, bfloat16) and device [10*]
        - advantages detached even when scores requires grad [10*]
        - scores not modified in place [10*]

    Tolerance: values are compared with the reference per dtype: float64 within 1e-10 relative
    (+1e-12 absolute), float32 within 1e-4 relative + 1e-5 absolute, bfloat16 within 2e-2
    relative + 2e-2 absolute.
    """
    # YOUR CODE: validate scores (1-D), group_size (>= 2) and N (a multiple of group_size)

    # YOUR CODE: without gradient, view the scores as [N / group_size, group_size]

    # YOUR CODE: each answer's baseline is the mean of the other answers of its row
    raise NotImplementedError("compute_rloo_advantages is not written yet")


if __name__ == "__main__":
    # One group of 3: baselines (2 + 3) / 2, (1 + 3) / 2, (1 + 2) / 2.
    adv = compute_rloo_advantages(torch.tensor([1.0, 2.0, 3.0]), 3)
    assert torch.allclose(adv, torch.tensor([-1.5, 0.0, 1.5])), adv
    # Two groups of 2 at different levels: each answer against the other of its own pair.
    adv = compute_rloo_advantages(torch.tensor([0.0, 1.0, 10.0, 14.0]), 2)
    assert torch.allclose(adv, torch.tensor([-1.0, 1.0, -4.0, 4.0])), adv
    scores = torch.tensor([1.0, 2.0], requires_grad=True)
    assert not compute_rloo_advantages(scores, 2).requires_grad
    print("self-tests passed")
