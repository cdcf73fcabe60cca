"""Exercise dpo-loss: the Direct Preference Optimization loss and its implicit rewards."""

import torch
import torch.nn.functional as F


def compute_dpo_loss(policy_chosen_logps, policy_rejected_logps, ref_chosen_logps, ref_rejected_logps, beta=0.1):
    """DPO loss: mean(-logsigmoid(beta * (log-ratio of chosen - log-ratio of rejected))).

    Args:
        policy_chosen_logps: [B] summed log-probabilities of the chosen answers under the
            policy being trained; gradient must flow to this tensor.
        policy_rejected_logps: [B] the same for the rejected answers; gradient flows here too.
        ref_chosen_logps: [B] log-probabilities of the chosen answers under the frozen
            reference model.
        ref_rejected_logps: [B] the same for the rejected answers.
        All four must have the same shape (no broadcasting).
        beta: the strength of the implicit KL constraint (the temperature of the rewards).

    Returns:
        (loss, chosen_rewards, rejected_rewards), all in the inputs' dtype and device:
        chosen_rewards = beta * (policy_chosen_logps - ref_chosen_logps), [B], detached;
        rejected_rewards = beta * (policy_rejected_logps - ref_rejected_logps), [B], detached;
        loss = mean(-logsigmoid(chosen_rewards - rejected_rewards)), a 0-dim tensor computed
        from the undetached terms so gradient reaches the two policy inputs. It must stay
        finite and exact for large gaps (a reward gap of -200 gives a loss of 200).

    Raises:
        ValueError naming the offending argument when a shape differs from
        policy_chosen_logps's.
    Must not modify its inputs in place.

    Graded (points in brackets; * counts only once the values on ordinary inputs are right):
        - loss on random batches (default beta) [12]
        - loss with non-default beta [10]
        - chosen_rewards and rejected_rewards: beta * (policy - reference) [12]
        - hand-worked values (log 2 at equal log-ratios, the documented example) [9]
        - gradient of the loss with respect to both policy inputs; the two reference inputs are not graded
          [14]
        - chosen_rewards and rejected_rewards are detached [8*]
        - finite and exact for reward gaps of hundreds (float32); loss and gradients stay finite [12]
        - ValueError on mismatched shapes (no broadcasting) [8*]
        - results in the inputs' dtype (float32, float64, bfloat16) and device; 0-dim loss [10*]
        - inputs not modified in place [5*]

    Tolerance: values and gradients are compared with the reference per dtype: float64 within 1e-10
    relative (+1e-12 absolute), float32 within 1e-4 relative + 1e-5 absolute, bfloat16 within 2e-2
    relative + 2e-2 absolute.
    """
    for name, other in (
        ("policy_rejected_logps", policy_rejected_logps),
        ("ref_chosen_logps", ref_chosen_logps),
        ("ref_rejected_logps", ref_rejected_logps),
    ):
        if other.shape != policy_chosen_logps.shape:
            raise ValueError(
                f"{name} has shape {tuple(other.shape)}, policy_chosen_logps has {tuple(policy_chosen_logps.shape)}"
            )

    chosen_rewards = beta * (policy_chosen_logps - ref_chosen_logps)
    rejected_rewards = beta * (policy_rejected_logps - ref_rejected_logps)

    loss = -F.logsigmoid(chosen_rewards - rejected_rewards.detach()).mean()

    return loss, chosen_rewards.detach(), rejected_rewards.detach()


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
