"""Exercise grpo-advantages: group-relative outcome advantages (GRPO).

Fill in the `# YOUR CODE` blocks, run `python this_file.py` for the self-tests, then submit
with `ppo-submit this_file.py`.
"""

import torch


def compute_grpo_advantages(scores, group_size, eps=1e-6, scale_by_std=True):
    """Each answer's score relative to the other answers to the same prompt.

    Args:
        scores: [N] outcome scores (one per answer). The answers come in consecutive groups
            of group_size answers to the same prompt: scores[0:G] is prompt 0, scores[G:2G]
            prompt 1, and so on.
        group_size: G, the number of answers per prompt; N must be a multiple of it.
        eps: added to the group's standard deviation (outside the square root).
        scale_by_std: when False, only the group mean is subtracted.

    Conventions:
        advantage = (score - group mean) / (group std + eps), with the unbiased std
        (Bessel's correction: divide by G - 1); without the division when scale_by_std is
        False. A group whose scores are all equal gets exactly 0, never NaN: detect the zero
        spread (max == min), since the float32 mean of a constant group can be one rounding
        step off and that step divided by eps is garbage.

    Returns:
        A [N] tensor (flat, in the order of scores), in the scores' dtype (float32 for
        integer scores) and device.

    Raises:
        ValueError when N is not a multiple of group_size, when group_size < 2 (0 included:
        check it before N % group_size), when scores is not 1-D (an already grouped
        [N // G, G] tensor included), or when eps is negative.
    Must not modify scores in place.

    Graded (points in brackets; * counts only once the values on ordinary inputs are right):
        - advantages on random scores (group sizes 3, 4, 8; 0/1 rewards) [20]
        - scale_by_std=False only subtracts the group mean [10]
        - a group of all-equal scores gets 0, not NaN; exactly 0, also when the group's float mean is a
          rounding step off: detect a zero spread [12]
        - eps added to the std, outside the square root (eps=0.5; near-tied groups) [10]
        - unbiased std (Bessel's correction) in groups of 2 and 3 [8]
        - groups are consecutive runs of group_size scores [8]
        - result is a flat [N] tensor in the order of scores [6]
        - ValueError when N is not a multiple of group_size, for group_size < 2, or a negative eps;
          group_size=0 included: a ValueError, never a ZeroDivisionError; and for scores that are not 1-D
          (a [4, 4] tensor included) [10*]
        - result in the scores' dtype (float32, float64, bfloat16; float32 for integer scores) and device
          [10*]
        - scores not modified in place [6*]

    Tolerance: values and gradients are compared with the reference per dtype: float64 within 1e-10
    relative (+1e-12 absolute), float32 within 1e-4 relative + 1e-5 absolute, bfloat16 within 2e-2
    relative + 2e-2 absolute. Where a group's scores nearly cancel, the tolerance grows by the group's
    cancellation factor: plus group_size * u * |mean| / (std + eps) * (1 + |advantage|) absolute, with
    u = 2.2e-16 for float64 scores, 1.2e-7 otherwise.
    """
    # YOUR CODE: check group_size, eps and that scores is 1-D; then that N is a multiple of group_size

    # YOUR CODE: view the scores as [N // G, G] consecutive groups

    # YOUR CODE: subtract each group's mean; divide by its unbiased std + eps when scale_by_std

    # YOUR CODE: back to a flat [N] tensor
    raise NotImplementedError("compute_grpo_advantages is not written yet")


if __name__ == "__main__":
    # Two prompts, two answers each: groups [1, 2] and [3, 5]. Means 1.5 and 4; unbiased
    # stds sqrt(0.5) and sqrt(2); so the advantages are -+0.5/sqrt(0.5) and -+1/sqrt(2).
    adv = compute_grpo_advantages(torch.tensor([1.0, 2.0, 3.0, 5.0]), group_size=2)
    assert torch.allclose(adv, torch.tensor([-0.70710677, 0.70710677, -0.70710677, 0.70710677]), atol=1e-5), adv
    # scale_by_std=False only centers each group.
    adv = compute_grpo_advantages(torch.tensor([1.0, 2.0, 3.0, 5.0]), group_size=2, scale_by_std=False)
    assert torch.allclose(adv, torch.tensor([-0.5, 0.5, -1.0, 1.0])), adv
    # Every answer to the prompt got the same score: no signal, advantage 0 (not NaN).
    adv = compute_grpo_advantages(torch.tensor([1.0, 1.0, 1.0, 0.0, 1.0, 0.0]), group_size=3)
    assert torch.equal(adv[:3], torch.zeros(3)), adv
    assert adv.shape == (6,)
    # 5 scores do not split into groups of 2; [2, 2] scores are not 1-D.
    for bad in (torch.zeros(5), torch.zeros(2, 2)):
        try:
            compute_grpo_advantages(bad, group_size=2)
        except ValueError:
            pass
        else:
            raise AssertionError(f"expected ValueError for scores of shape {list(bad.shape)}")
    print("self-tests passed")
