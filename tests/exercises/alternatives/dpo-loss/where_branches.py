"""Style: -log sigmoid(z) by torch.where between its two stable branches, rewards detached on return."""

import torch


def _neg_log_sigmoid(z):
    # z > 0: log(1 + e^-z); z <= 0: -z + log(1 + e^z). Each branch is fed only where it is
    # taken (0 elsewhere), so no overflow and no NaN flows back through the untaken one.
    positive = z > 0
    zp = torch.where(positive, z, torch.zeros_like(z))
    zn = torch.where(positive, torch.zeros_like(z), z)
    return torch.where(positive, torch.log1p(torch.exp(-zp)), torch.log1p(torch.exp(zn)) - zn)


def compute_dpo_loss(policy_chosen_logps, policy_rejected_logps, ref_chosen_logps, ref_rejected_logps, beta=0.1):
    shape = policy_chosen_logps.shape
    for name, t in (("policy_rejected_logps", policy_rejected_logps), ("ref_chosen_logps", ref_chosen_logps),
                    ("ref_rejected_logps", ref_rejected_logps)):
        if t.shape != shape:
            raise ValueError(f"{name} has shape {tuple(t.shape)}, expected {tuple(shape)}")
    chosen = beta * (policy_chosen_logps - ref_chosen_logps)
    rejected = beta * (policy_rejected_logps - ref_rejected_logps)
    loss = _neg_log_sigmoid(chosen - rejected).mean()
    return loss, chosen.detach(), rejected.detach()


if __name__ == "__main__":
    import math

    zero = torch.zeros(2)
    loss, c, r = compute_dpo_loss(zero, zero, zero, zero)
    assert torch.isclose(loss, torch.tensor(math.log(2.0))) and torch.equal(c, zero) and torch.equal(r, zero)
    p = torch.tensor([0.0], requires_grad=True)
    loss, _, _ = compute_dpo_loss(p, torch.tensor([2000.0]), torch.tensor([0.0]), torch.tensor([0.0]), beta=0.1)
    loss.backward()
    assert torch.isclose(loss, torch.tensor(200.0)) and torch.isfinite(p.grad).all(), (loss, p.grad)
    print("self-tests passed")
