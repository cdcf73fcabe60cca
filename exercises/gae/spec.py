"""What the learner is asked for (docs/contract.md §3, verbatim in meaning)."""

from exercises.framework import ExerciseSpec

SPEC = ExerciseSpec(
    slug="gae",
    title="Generalized Advantage Estimation",
    function_name="compute_gae",
    summary="GAE advantages and returns over right-padded [B, T] rewards and values.",
    order=3,
    description="""\
`compute_gae(rewards, values, mask=None, gamma=1.0, lam=0.95) -> (advantages, returns)`

Generalized Advantage Estimation over `[B, T]` per-token rewards and critic values.
`delta_t = r_t + gamma * V_{t+1} - V_t`, where `V_{t+1}` is 0 after the last valid token;
`A_t = delta_t + gamma * lam * A_{t+1}`; `returns = advantages + values`.
Positions where mask is 0 get advantage 0 and return 0. No whitening here.
Both outputs are detached: they never require grad, even when `values` (or `rewards`) does.

`mask` is a `[B, T]` tensor of 0/1 (float or bool), right-padded (each row is ones, then
zeros); `mask=None` means every position is valid. Inputs at padded positions may hold any
finite value: they must not leak into the result. `rewards`, `values` and `mask` must have
equal shapes (otherwise `ValueError` naming the argument; no broadcasting). Both outputs are
`[B, T]`, in the inputs' dtype and on their device; inputs are not modified in place.
Memory must stay linear in `T` (long responses of thousands of tokens are graded).
""",
)
