"""What the learner is asked for (docs/contract.md §8, verbatim in meaning)."""

from exercises.framework import ExerciseSpec

SPEC = ExerciseSpec(
    slug="kl-penalty",
    title="Per-token KL estimators k1, k2, k3",
    function_name="compute_kl_penalty",
    summary="Elementwise KL estimators between the policy and the reference, stable for large log-ratios.",
    order=8,
    description="""\
`compute_kl_penalty(log_probs, ref_log_probs, kind="k1")`

Per-token KL estimators between the policy and the reference, elementwise, any shape:

- `k1 = log_probs - ref_log_probs`;
- `k2 = 0.5 * (log_probs - ref_log_probs)^2`;
- `k3 = exp(ref_log_probs - log_probs) - (ref_log_probs - log_probs) - 1`.

An unknown `kind` raises `ValueError`. The result must stay finite and exact for large
log-ratio differences (log-probs of -200 are possible): work with log-probs, never with
probabilities. k3 for nearly equal log-probs is accurate only through `expm1`:
`exp(r) - r - 1` rounds to 0 in float32 for |r| < 1e-4.

`ref_log_probs` must have the shape of `log_probs` (otherwise `ValueError` naming the argument;
no broadcasting). Returns a tensor of that shape, in the inputs' dtype and on their device;
inputs are not modified in place. The result is differentiable with respect to `log_probs`.
""",
)
