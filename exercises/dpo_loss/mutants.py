"""Known-wrong solutions of `dpo-loss`, each embodying one misconception.

Each function is self-contained (torch, F and math only) so it can be submitted as a file.
"""

import math  # noqa: F401  (available to submitted mutants)

import torch
import torch.nn.functional as F

from exercises.framework import mutant


@mutant("rewards not detached: the returned chosen/rejected rewards still carry gradient into the policy")
def rewards_not_detached(policy_chosen_logps, policy_rejected_logps, ref_chosen_logps, ref_rejected_logps, beta=0.1):
    for t in (policy_rejected_logps, ref_chosen_logps, ref_rejected_logps):
        if t.shape != policy_chosen_logps.shape:
            raise ValueError("shapes differ")
    chosen = beta * (policy_chosen_logps - ref_chosen_logps)
    rejected = beta * (policy_rejected_logps - ref_rejected_logps)
    return -F.logsigmoid(chosen - rejected).mean(), chosen, rejected


@mutant("policy and reference swapped: the implicit reward is beta * (policy - reference), not reference - policy")
def ref_policy_swapped(policy_chosen_logps, policy_rejected_logps, ref_chosen_logps, ref_rejected_logps, beta=0.1):
    for t in (policy_rejected_logps, ref_chosen_logps, ref_rejected_logps):
        if t.shape != policy_chosen_logps.shape:
            raise ValueError("shapes differ")
    chosen = beta * (ref_chosen_logps - policy_chosen_logps)
    rejected = beta * (ref_rejected_logps - policy_rejected_logps)
    return -F.logsigmoid(chosen - rejected).mean(), chosen.detach(), rejected.detach()


@mutant("beta missing from the loss: the sigmoid gets the raw log-ratio difference instead of beta times it")
def beta_missing(policy_chosen_logps, policy_rejected_logps, ref_chosen_logps, ref_rejected_logps, beta=0.1):
    for t in (policy_rejected_logps, ref_chosen_logps, ref_rejected_logps):
        if t.shape != policy_chosen_logps.shape:
            raise ValueError("shapes differ")
    chosen_logratios = policy_chosen_logps - ref_chosen_logps
    rejected_logratios = policy_rejected_logps - ref_rejected_logps
    loss = -F.logsigmoid(chosen_logratios - rejected_logratios).mean()
    return loss, (beta * chosen_logratios).detach(), (beta * rejected_logratios).detach()


@mutant("log(sigmoid(x)) instead of logsigmoid(x): sigmoid underflows to 0 for large negative reward gaps, so the loss becomes inf")
def log_of_sigmoid(policy_chosen_logps, policy_rejected_logps, ref_chosen_logps, ref_rejected_logps, beta=0.1):
    for t in (policy_rejected_logps, ref_chosen_logps, ref_rejected_logps):
        if t.shape != policy_chosen_logps.shape:
            raise ValueError("shapes differ")
    chosen = beta * (policy_chosen_logps - ref_chosen_logps)
    rejected = beta * (policy_rejected_logps - ref_rejected_logps)
    return -torch.log(torch.sigmoid(chosen - rejected)).mean(), chosen.detach(), rejected.detach()


@mutant("chosen and rejected swapped in the loss: it pushes the policy towards the rejected answers")
def chosen_rejected_swapped(policy_chosen_logps, policy_rejected_logps, ref_chosen_logps, ref_rejected_logps, beta=0.1):
    for t in (policy_rejected_logps, ref_chosen_logps, ref_rejected_logps):
        if t.shape != policy_chosen_logps.shape:
            raise ValueError("shapes differ")
    chosen = beta * (policy_chosen_logps - ref_chosen_logps)
    rejected = beta * (policy_rejected_logps - ref_rejected_logps)
    return -F.logsigmoid(rejected - chosen).mean(), chosen.detach(), rejected.detach()


@mutant("reference model ignored: the rewards use the policy log-probs alone instead of the log-ratio to the reference")
def reference_ignored(policy_chosen_logps, policy_rejected_logps, ref_chosen_logps, ref_rejected_logps, beta=0.1):
    for t in (policy_rejected_logps, ref_chosen_logps, ref_rejected_logps):
        if t.shape != policy_chosen_logps.shape:
            raise ValueError("shapes differ")
    chosen = beta * policy_chosen_logps
    rejected = beta * policy_rejected_logps
    return -F.logsigmoid(chosen - rejected).mean(), chosen.detach(), rejected.detach()


@mutant("loss computed from the detached rewards: no gradient reaches the policy, so it never learns")
def loss_from_detached(policy_chosen_logps, policy_rejected_logps, ref_chosen_logps, ref_rejected_logps, beta=0.1):
    for t in (policy_rejected_logps, ref_chosen_logps, ref_rejected_logps):
        if t.shape != policy_chosen_logps.shape:
            raise ValueError("shapes differ")
    chosen = (beta * (policy_chosen_logps - ref_chosen_logps)).detach()
    rejected = (beta * (policy_rejected_logps - ref_rejected_logps)).detach()
    return -F.logsigmoid(chosen - rejected).mean(), chosen, rejected


@mutant("no shape check: a [B, 1] log-prob tensor silently broadcasts against [B] ones")
def no_shape_check(policy_chosen_logps, policy_rejected_logps, ref_chosen_logps, ref_rejected_logps, beta=0.1):
    chosen = beta * (policy_chosen_logps - ref_chosen_logps)
    rejected = beta * (policy_rejected_logps - ref_rejected_logps)
    return -F.logsigmoid(chosen - rejected).mean(), chosen.detach(), rejected.detach()
