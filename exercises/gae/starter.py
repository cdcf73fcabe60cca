"""Exercise gae: Generalized Advantage Estimation over padded responses.

Fill in the `# YOUR CODE` blocks, run `python this_file.py` for the self-tests, then submit
with `ppo-submit this_file.py`.
"""

import torch


def compute_gae(rewards, values, mask=None, gamma=1.0, lam=0.95):
    """GAE advantages and returns (lambda-returns) for a batch of responses.

    Args:
        rewards: [B, T] per-token rewards r_t (it may require grad: the outputs must not).
        values: [B, T] critic values V_t (it may require grad: the outputs must not).
        mask: [B, T] of 0/1 (float or bool) marking valid response tokens, right-padded
            (each row is ones, then zeros); None means every position is valid. Inputs at
            padded positions may hold any finite value and must not leak into the result.
        gamma: discount factor.
        lam: GAE lambda.

    Conventions:
        delta_t = r_t + gamma * V_{t+1} - V_t, where V_{t+1} is 0 after the last valid token
        (never the value stored at a padded position);
        A_t = delta_t + gamma * lam * A_{t+1}, computed backwards in time;
        returns = advantages + values.
        Padded positions get advantage 0 and return 0. No whitening here.
        Memory must stay linear in T (no [T, T] matrices: T may be thousands of tokens).

    Returns:
        (advantages, returns), both [B, T], detached (requires_grad False), in the inputs'
        dtype and on their device.

    Raises:
        ValueError naming the offending argument when values or mask do not have the shape
        of rewards (no broadcasting).
    Must not modify its inputs in place.

    Graded (points in brackets; * counts only once the values on ordinary inputs are right):
        - advantages on random padded inputs (default gamma=1, lam=0.95) [14]
        - returns = advantages + values on random padded inputs [10]
        - advantages and returns with non-default gamma and lam [12]
        - V_{t+1} is 0 after the last valid token (no bootstrapping from padding) [10]
        - advantage 0 and return 0 at padded positions [8*]
        - length-1 rows and a row with no valid token [10]
        - mask=None: every position valid [6]
        - both outputs detached even when values requires grad, and when rewards requires grad; neither
          output requires grad, whichever input does [8*]
        - ValueError on mismatched shapes (no broadcasting) [6*]
        - outputs in the inputs' dtype (float32, float64, bfloat16) and device; bfloat16 inputs with
          mask=None come back in bfloat16 too [6*]
        - inputs not modified in place [4*]
        - peak memory on a 4 x 3072 input within max(1.5 x reference, reference + 16 MiB); budget as stated;
          memory must stay linear in T: a [T, T] discount matrix exceeds it [6*]

    Tolerance: values and gradients are compared with the reference per dtype: float64 within 1e-10
    relative (+1e-12 absolute), float32 within 1e-4 relative + 1e-5 absolute, bfloat16 within 2e-2
    relative + 2e-2 absolute.
    """
    # YOUR CODE: check that values (and mask, when given) have the shape of rewards

    # YOUR CODE: work without gradient; turn the mask into a boolean "valid" tensor

    # YOUR CODE: loop t = T-1 ... 0, carrying V_{t+1} and A_{t+1} (both 0 past the last valid token)

    # YOUR CODE: returns = advantages + values; zero both at padded positions
    raise NotImplementedError("compute_gae is not written yet")


if __name__ == "__main__":
    # One response of 3 tokens, reward only at the end, gamma = lam = 1:
    # deltas are 0, 0, 0.5 and every advantage is 0.5; returns are 1.0.
    adv, ret = compute_gae(torch.tensor([[0.0, 0.0, 1.0]]), torch.tensor([[0.5, 0.5, 0.5]]), gamma=1.0, lam=1.0)
    assert torch.allclose(adv, torch.tensor([[0.5, 0.5, 0.5]])), adv
    assert torch.allclose(ret, torch.tensor([[1.0, 1.0, 1.0]])), ret
    # lam = 0.5 discounts the future advantage: 0.5, then 0 + 0.5 * 0.5, then 0.5 * 0.25.
    adv, ret = compute_gae(torch.tensor([[0.0, 0.0, 1.0]]), torch.tensor([[0.5, 0.5, 0.5]]), gamma=1.0, lam=0.5)
    assert torch.allclose(adv, torch.tensor([[0.125, 0.25, 0.5]])), adv
    assert torch.allclose(ret, torch.tensor([[0.625, 0.75, 1.0]])), ret
    # The last token is padding (garbage 9 and 7): V_2 counts as 0 and position 2 gets 0.
    # delta_1 = 2 + 0 - 0.25 = 1.75; delta_0 = 1 + 0.25 - 0.5 = 0.75; A_0 = 0.75 + 1.75.
    # values and rewards require grad: neither output does.
    values = torch.tensor([[0.5, 0.25, 7.0]], requires_grad=True)
    rewards = torch.tensor([[1.0, 2.0, 9.0]], requires_grad=True)
    adv, ret = compute_gae(rewards, values, torch.tensor([[1.0, 1.0, 0.0]]), gamma=1.0, lam=1.0)
    assert torch.allclose(adv, torch.tensor([[2.5, 1.75, 0.0]])), adv
    assert torch.allclose(ret, torch.tensor([[3.0, 2.0, 0.0]])), ret
    assert not adv.requires_grad and not ret.requires_grad
    print("self-tests passed")
