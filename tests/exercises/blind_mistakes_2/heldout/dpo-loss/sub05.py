"""Direct Preference Optimization loss and its implicit rewards."""

import torch


def compute_dpo_loss(policy_chosen_logps, policy_rejected_logps, ref_chosen_logps, ref_rejected_logps, beta=0.1):
    shape = policy_chosen_logps.shape
    if policy_rejected_logps.shape != shape:
        raise ValueError("policy_rejected_logps must have the shape of policy_chosen_logps")
    if ref_chosen_logps.shape != shape:
        raise ValueError("ref_chosen_logps must have the shape of policy_chosen_logps")
    if ref_rejected_logps.shape != shape:
        raise ValueError("ref_rejected_logps must have the shape of policy_chosen_logps")

    chosen_rewards = beta * (policy_chosen_logps - ref_chosen_logps)
    rejected_rewards = beta * (policy_rejected_logps - ref_rejected_logps)
    margin = chosen_rewards - rejected_rewards
    losses = torch.logaddexp(torch.zeros_like(margin), -margin)
    return losses.sum(), chosen_rewards.detach(), rejected_rewards.detach()


if __name__ == "__main__":
    import math

    # equal log-ratios: rewards 0 and a loss of log 2
    z = torch.tensor([-5.0, -7.0])
    loss, chosen, rejected = compute_dpo_loss(z, z, z, z)
    assert torch.isclose(loss, torch.tensor(math.log(2.0))), loss
    assert torch.equal(chosen, torch.zeros(2)) and torch.equal(rejected, torch.zeros(2))
    # policy -10 / -12, reference -11 / -11, beta 0.1: rewards +0.1 and -0.1, loss -logsigmoid(0.2)
    pc = torch.tensor([-10.0], requires_grad=True)
    pr = torch.tensor([-12.0], requires_grad=True)
    loss, chosen, rejected = compute_dpo_loss(pc, pr, torch.tensor([-11.0]), torch.tensor([-11.0]), beta=0.1)
    assert torch.allclose(chosen, torch.tensor([0.1])) and torch.allclose(rejected, torch.tensor([-0.1]))
    assert torch.isclose(loss, torch.tensor(math.log1p(math.exp(-0.2)))), loss
    assert loss.dim() == 0 and not chosen.requires_grad and not rejected.requires_grad
    loss.backward()
    # d loss / d policy_chosen = -beta * sigmoid(-0.2); the rejected side gets the opposite
    assert torch.isclose(pc.grad, torch.tensor([-0.1 / (1 + math.exp(0.2))])).all(), pc.grad
    assert torch.isclose(pr.grad, -pc.grad).all(), pr.grad
    # a reward gap of -200 costs 200, not inf
    loss, _, _ = compute_dpo_loss(
        torch.tensor([-400.0]), torch.tensor([0.0]), torch.tensor([0.0]), torch.tensor([0.0]), beta=0.5
    )
    assert torch.isclose(loss, torch.tensor(200.0)), loss
    print("self-tests passed")
