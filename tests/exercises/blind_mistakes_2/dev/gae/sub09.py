"""GAE written with plain Python floats per row, then turned back into tensors."""

import torch


def compute_gae(rewards, values, mask=None, gamma=1.0, lam=0.95):
    if values.shape != rewards.shape:
        raise ValueError(f"values: expected shape {tuple(rewards.shape)}, got {tuple(values.shape)}")

    n_rows, n_steps = rewards.shape
    if mask is None:
        valid = [[True] * n_steps for _ in range(n_rows)]
    else:
        valid = (mask != 0).tolist()
    r_rows = rewards.detach().double().tolist()
    v_rows = values.detach().double().tolist()

    adv_rows, ret_rows = [], []
    for b in range(n_rows):
        adv = [0.0] * n_steps
        ret = [0.0] * n_steps
        next_value = 0.0
        next_adv = 0.0
        for t in range(n_steps):
            if not valid[b][t]:
                next_value = 0.0
                next_adv = 0.0
                continue
            delta = r_rows[b][t] + gamma * next_value - v_rows[b][t]
            next_adv = delta + gamma * lam * next_adv
            next_value = v_rows[b][t]
            adv[t] = next_adv
            ret[t] = next_adv + v_rows[b][t]
        adv_rows.append(adv)
        ret_rows.append(ret)

    advantages = torch.tensor(adv_rows, dtype=torch.float64).to(device=rewards.device, dtype=rewards.dtype)
    returns = torch.tensor(ret_rows, dtype=torch.float64).to(device=rewards.device, dtype=rewards.dtype)
    return advantages.reshape(rewards.shape), returns.reshape(rewards.shape)


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
    values = torch.tensor([[0.5, 0.25, 7.0]], requires_grad=True)
    adv, ret = compute_gae(torch.tensor([[1.0, 2.0, 9.0]]), values, torch.tensor([[1.0, 1.0, 0.0]]), gamma=1.0, lam=1.0)
    assert torch.allclose(adv, torch.tensor([[2.5, 1.75, 0.0]])), adv
    assert torch.allclose(ret, torch.tensor([[3.0, 2.0, 0.0]])), ret
    assert not adv.requires_grad and not ret.requires_grad
    print("self-tests passed")
