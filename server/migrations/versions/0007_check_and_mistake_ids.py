"""Ids beside the display sentences: ``check_results.check_id`` and ``check_results.mistake_id``.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01

A check result kept its check's sentence (``name``) and the named mistake's title
(``misconception``), and the statistics and the dashboard grouped by them, so rewording one
split its history in two. From here on the judge stores the ids beside them
(``"<slug>/<check>"``, ``"<slug>/<mistake>"``), and every count groups by id and shows the
catalogue's current wording.

The backfill is best effort: a stored sentence or title that is today's wording of a check or
mistake of the row's exercise gets that id (the wording is frozen below, as of this revision,
so the migration does the same whenever it runs); any other row keeps NULL ids and is grouped
by its stored text, as before. The index on ``(submission_id, name, passed)`` becomes
``(submission_id, check_id, name, passed)``: per-check failure rates stay index-only.
Downgrade drops the ids and restores the index.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: Long enough for ``"<slug>/<id>"`` (slugs are at most 64 characters).
ID_LENGTH = 160
_OLD_INDEX = "ix_check_results_submission_id_name_passed"
_NEW_INDEX = "ix_check_results_submission_id_check_id_name_passed"
_MAP = "ids_backfill_0007"

#: Today's check sentences, per exercise: {exercise: {sentence: check id}}.
CHECKS: dict[str, dict[str, str]] = {
    'actor-loss': {
        'value on random inputs (default clip_range)':
            'actor-loss/values_default',
        'value with non-default clip_range':
            'actor-loss/values_custom_clip',
        "clipped side: ratio beyond 1 +/- clip_range in the advantage's direction":
            'actor-loss/clipped_side',
        'unclipped side: ratio beyond the range against the advantage, and inside it':
            'actor-loss/unclipped_side',
        'gradient with respect to log_probs_new':
            'actor-loss/gradient',
        'zero gradient where the clipped term is the minimum':
            'actor-loss/zero_grad_where_clipped',
        'ValueError on mismatched shapes (no broadcasting)':
            'actor-loss/shape_errors',
        "0-dim result in the inputs' dtype (float32, float64, bfloat16) and device":
            'actor-loss/dtype_device',
        'inputs not modified in place':
            'actor-loss/no_inplace',
        'any leading shape (1-D and 3-D inputs)':
            'actor-loss/any_shape',
        'peak memory on a 16 x 32768 input within budget':
            'actor-loss/memory',
    },
    'masked-actor-loss': {
        'seq-mean-token-mean (the default): masked mean per row, then mean over the batch':
            'masked-actor-loss/values_seq',
        'token-mean: sum over all valid tokens divided by their count':
            'masked-actor-loss/values_token',
        'non-default clip_range, both modes':
            'masked-actor-loss/values_custom_clip',
        'edge rows: length-1 rows, and rows with no valid token (they add 0 to the batch mean, never NaN)':
            'masked-actor-loss/edge_rows',
        'large values at padded positions do not leak (no inf * 0 = NaN)':
            'masked-actor-loss/large_padding',
        'gradient with respect to log_probs_new, both modes (zero at padding)':
            'masked-actor-loss/gradient',
        'ValueError for an unknown loss_agg_mode':
            'masked-actor-loss/bad_mode',
        'ValueError on mismatched shapes (no broadcasting)':
            'masked-actor-loss/shape_errors',
        "0-dim result in the inputs' dtype (float32, float64, bfloat16) and device":
            'masked-actor-loss/dtype_device',
        'inputs not modified in place':
            'masked-actor-loss/no_inplace',
    },
    'gae': {
        'advantages on random padded inputs (default gamma=1, lam=0.95)':
            'gae/advantages_default',
        'returns = advantages + values on random padded inputs':
            'gae/returns_default',
        'advantages and returns with non-default gamma and lam':
            'gae/hyper',
        'V_{t+1} is 0 after the last valid token (no bootstrapping from padding)':
            'gae/no_bootstrap_from_padding',
        'advantage 0 and return 0 at padded positions':
            'gae/zero_at_padding',
        'length-1 rows and a row with no valid token':
            'gae/edge_rows',
        'mask=None: every position valid':
            'gae/no_mask',
        'both outputs detached even when values requires grad':
            'gae/detached',
        'ValueError on mismatched shapes (no broadcasting)':
            'gae/shape_errors',
        "outputs in the inputs' dtype (float32, float64, bfloat16) and device":
            'gae/dtype_device',
        'inputs not modified in place':
            'gae/no_inplace',
        'peak memory on a 4 x 3072 input within max(1.5 x reference, reference + 16 MiB)':
            'gae/memory',
    },
    'critic-loss': {
        'unclipped loss (clip_range=None): 0.5 x masked mean of (values - R)^2 per row, mean over the batch':
            'critic-loss/values_unclipped',
        'clipped loss: max of the clipped and unclipped errors, values clipped around old_values':
            'critic-loss/values_clipped',
        'clip_range=0.0 still clips (0 is a clip range, only None turns clipping off)':
            'critic-loss/clip_zero',
        'edge rows: length-1 rows, and rows with no valid token (they add 0 to the batch mean, never NaN)':
            'critic-loss/edge_rows',
        'large values at padded positions do not leak (no inf * 0 = NaN)':
            'critic-loss/large_padding',
        'gradient with respect to values (zero at padding; zero where the clipped error is the larger)':
            'critic-loss/gradient',
        'no gradient to old_values or returns (they are targets, not parameters)':
            'critic-loss/no_grad_to_targets',
        'ValueError on mismatched shapes (no broadcasting)':
            'critic-loss/shape_errors',
        "0-dim result in the inputs' dtype (float32, float64, bfloat16) and device":
            'critic-loss/dtype_device',
        'inputs not modified in place':
            'critic-loss/no_inplace',
    },
    'token-rewards': {
        'rewards on random padded batches (default kl_coef=0.1)':
            'token-rewards/values_default',
        'non-default kl_coef':
            'token-rewards/values_custom_coef',
        'score added at the last VALID token of each row (not at position T - 1)':
            'token-rewards/score_placement',
        'padded positions are exactly 0':
            'token-rewards/padding_zero',
        'mask=None (every position valid) and bool masks':
            'token-rewards/mask_kinds',
        'edge rows: length-1 rows, and rows with no valid token (all 0, no score)':
            'token-rewards/edge_rows',
        'rewards are detached (never require grad, even when the inputs do)':
            'token-rewards/detached',
        'ValueError on mismatched shapes (scores must be [B]; no broadcasting)':
            'token-rewards/shape_errors',
        "result in the inputs' dtype (float32, float64, bfloat16) and device":
            'token-rewards/dtype_device',
        'inputs not modified in place':
            'token-rewards/no_inplace',
    },
    'pairwise-loss': {
        'value on random pairs without a margin':
            'pairwise-loss/values_no_margin',
        'value with a scalar margin (a float or a 0-dim tensor)':
            'pairwise-loss/values_float_margin',
        'value with a per-pair tensor margin':
            'pairwise-loss/values_tensor_margin',
        'hand-worked values (log 2 at equal rewards, margins)':
            'pairwise-loss/worked_values',
        'finite and exact for gaps of hundreds (float32)':
            'pairwise-loss/stable',
        'gradient with respect to chosen_rewards and rejected_rewards':
            'pairwise-loss/gradient',
        'ValueError on mismatched shapes of the rewards or a tensor margin (no broadcasting)':
            'pairwise-loss/shape_errors',
        "0-dim result in the inputs' dtype (float32, float64, bfloat16) and device":
            'pairwise-loss/dtype_device',
        'inputs not modified in place':
            'pairwise-loss/no_inplace',
        'any shape (2-D and 3-D rewards): mean over every element':
            'pairwise-loss/any_shape',
    },
    'whiten': {
        'whitened values on random padded inputs (valid positions)':
            'whiten/values_random',
        'shift_mean=False adds the mean back':
            'whiten/values_no_shift',
        "unbiased variance (Bessel's correction) with few valid values":
            'whiten/unbiased',
        'any shape (1-D and 3-D, with and without a mask)':
            'whiten/any_shape',
        'near-constant and constant values: finite and exact':
            'whiten/near_constant',
        'non-default eps, inside the square root':
            'whiten/custom_eps',
        'ValueError for fewer than two valid values':
            'whiten/too_few',
        'ValueError on a mask of another shape (no broadcasting)':
            'whiten/shape_errors',
        "result in the input's dtype (float32, float64, bfloat16) and device":
            'whiten/dtype_device',
        'inputs not modified in place':
            'whiten/no_inplace',
    },
    'kl-penalty': {
        'k1 = log_probs - ref_log_probs (and k1 is the default kind)':
            'kl-penalty/values_k1',
        'k2 = 0.5 * (log_probs - ref_log_probs)^2':
            'kl-penalty/values_k2',
        'k3 = exp(ref - log_probs) - (ref - log_probs) - 1':
            'kl-penalty/values_k3',
        'large and tiny log-ratios (log-probs down to -200; |r| below 1e-4 for k3, float32): finite and exact':
            'kl-penalty/large_gaps',
        'gradient with respect to log_probs':
            'kl-penalty/gradient',
        'any leading shape (0-D, 1-D, 3-D, 4-D inputs), elementwise':
            'kl-penalty/any_shape',
        'ValueError for an unknown kind':
            'kl-penalty/bad_kind',
        'ValueError on mismatched shapes (no broadcasting)':
            'kl-penalty/shape_errors',
        "result in the inputs' dtype (float32, float64, bfloat16) and device, shaped like the inputs":
            'kl-penalty/dtype_device',
        'inputs not modified in place':
            'kl-penalty/no_inplace',
    },
    'grpo-advantages': {
        'advantages on random scores (group sizes 3, 4, 8; 0/1 rewards)':
            'grpo-advantages/values_random',
        'scale_by_std=False only subtracts the group mean':
            'grpo-advantages/values_no_std',
        'a group of all-equal scores gets 0, not NaN':
            'grpo-advantages/all_equal',
        'eps added to the std, outside the square root (eps=0.5; near-tied groups)':
            'grpo-advantages/eps_outside',
        "unbiased std (Bessel's correction) in groups of 2 and 3":
            'grpo-advantages/unbiased',
        'groups are consecutive runs of group_size scores':
            'grpo-advantages/consecutive',
        'result is a flat [N] tensor in the order of scores':
            'grpo-advantages/flat',
        'ValueError when N is not a multiple of group_size, for group_size < 2, or a negative eps':
            'grpo-advantages/not_multiple',
        "result in the scores' dtype (float32, float64, bfloat16; float32 for integer scores) and device":
            'grpo-advantages/dtype_device',
        'scores not modified in place':
            'grpo-advantages/no_inplace',
    },
    'dpo-loss': {
        'loss on random batches (default beta)':
            'dpo-loss/loss_default',
        'loss with non-default beta':
            'dpo-loss/loss_custom_beta',
        'chosen_rewards and rejected_rewards: beta * (policy - reference)':
            'dpo-loss/rewards',
        'hand-worked values (log 2 at equal log-ratios, the documented example)':
            'dpo-loss/worked_values',
        'gradient of the loss with respect to both policy inputs':
            'dpo-loss/gradient',
        'chosen_rewards and rejected_rewards are detached':
            'dpo-loss/detached',
        'finite and exact for reward gaps of hundreds (float32)':
            'dpo-loss/stable',
        'ValueError on mismatched shapes (no broadcasting)':
            'dpo-loss/shape_errors',
        "results in the inputs' dtype (float32, float64, bfloat16) and device; 0-dim loss":
            'dpo-loss/dtype_device',
        'inputs not modified in place':
            'dpo-loss/no_inplace',
    },
    'ppo-memory': {
        "the chapter's example: 7B actor/critic/reference, 3B reward model, one GPU":
            'ppo-memory/chapter',
        "the chapter's example on 8 GPUs with ZeRO stage 3":
            'ppo-memory/chapter_zero3',
        'ZeRO stage 1 shards the optimizer state of the trainable models':
            'ppo-memory/stage1',
        'ZeRO stage 2 shards optimizer state and grads, not weights':
            'ppo-memory/stage2',
        'sharded bytes rounded up when not divisible by num_gpus':
            'ppo-memory/rounding',
        'non-default weight_bytes, grad_bytes and optimizer_bytes':
            'ppo-memory/byte_sizes',
        'random ledgers (counts, num_gpus, zero_stage, byte sizes)':
            'ppo-memory/random_ledgers',
        'ValueError on negative or fractional parameter counts, num_gpus < 1, or zero_stage outside 0-3':
            'ppo-memory/invalid_counts',
        'every entry is a Python int (whole bytes, not floats)':
            'ppo-memory/ints',
    },
}
#: Today's mistake titles, per exercise: {exercise: {title: mistake id}}.
MISTAKES: dict[str, dict[str, str]] = {
    'actor-loss': {
        'computing in float64: right values, but float64 copies of large inputs go over the memory budget':
            'actor-loss/float64-inside',
        'max instead of min: PPO takes the pessimistic (smaller) of the clipped and unclipped objectives':
            'actor-loss/max-for-min',
        'missing minus sign: the loss is the negated objective, since optimisers minimise':
            'actor-loss/missing-minus',
        'clipping the advantage instead of the probability ratio':
            'actor-loss/clip-advantage',
        'clip_range hard-coded to 0.2 instead of using the argument':
            'actor-loss/fixed-clip',
        'sum instead of mean over the elements':
            'actor-loss/sum-not-mean',
        'detached ratio: computing the ratio without gradient, so the policy never learns':
            'actor-loss/detached-ratio',
        'no shape check: a [B] advantage silently broadcasts against [B, T] log-probs':
            'actor-loss/no-shape-check',
        "in-place edit of an input: advantages scaled in place, changing the caller's tensor":
            'actor-loss/inplace-edit',
        'ratio without exp: log-probs are subtracted but never exponentiated':
            'actor-loss/ratio-without-exp',
        'inverted ratio: exp(old - new) instead of exp(new - old)':
            'actor-loss/inverted-ratio',
        'one-sided clip: only the upper bound 1 + clip_range is applied':
            'actor-loss/one-sided-clip',
        'result not reduced to a scalar: the per-element loss is returned':
            'actor-loss/no-reduction',
    },
    'masked-actor-loss': {
        'seq-mean-token-mean and token-mean swapped: seq-mean-token-mean averages each row first, then the rows; token-mean pools every valid token of the batch':
            'masked-actor-loss/swapped-modes',
        'the mask is ignored: padded positions are averaged in as if they were tokens':
            'masked-actor-loss/ignores-mask',
        "a row with no valid token gives 0/0 = NaN: clamp each row's token count to at least 1":
            'masked-actor-loss/empty-row-nan',
        'rows with no valid token dropped from the batch mean: they contribute 0 but still count in B':
            'masked-actor-loss/empty-rows-excluded',
        'each row divided by T (the padded length) instead of its own number of valid tokens':
            'masked-actor-loss/divide-by-length',
        'token-mean divided by every position B * T, padding included, instead of the number of valid tokens':
            'masked-actor-loss/token-mean-over-all-positions',
        'an unknown loss_agg_mode silently falls back to a default instead of raising ValueError':
            'masked-actor-loss/no-mode-validation',
        'padding masked by multiplying after exp: a large value at a padded position overflows to inf, and inf * 0 = NaN (select with torch.where before exp instead)':
            'masked-actor-loss/multiply-by-mask',
        'no shape check: a [B, 1] advantage (or mask) silently broadcasts against [B, T] log-probs':
            'masked-actor-loss/no-shape-check',
    },
    'gae': {
        'an O(T^2) discount matrix: right values, but a [T, T] intermediate where a backward loop needs O(T)':
            'gae/discount-matrix',
        'bootstrapping from padding: V_{t+1} after the last valid token must be 0, not the value stored at the padded position':
            'gae/bootstrap-from-padding',
        'recursion through padding: the mask is applied only to the outputs, so padded rewards and values leak into the last valid tokens':
            'gae/recursion-through-padding',
        'returns not masked: returns = advantages + values leaves the garbage values at padded positions instead of 0':
            'gae/returns-not-masked',
        'returns still carry gradient into the critic: returns = advantages + values with values not detached':
            'gae/returns-attached',
        'advantages still carry gradient into the critic: values are used without .detach() or torch.no_grad()':
            'gae/advantages-attached',
        'returns as the discounted reward-to-go (Monte Carlo) instead of advantages + values (the lambda-return)':
            'gae/returns-as-reward-to-go',
        'recursion run forwards in time: A_t accumulates the past (A_{t-1}) instead of the future (A_{t+1})':
            'gae/forward-recursion',
        'gamma missing from the TD error: delta_t = r_t + V_{t+1} - V_t instead of r_t + gamma * V_{t+1} - V_t':
            'gae/delta-without-gamma',
        'whitening inside GAE: the advantages come back normalised, but GAE returns the raw advantages (whiten later, separately)':
            'gae/whitened-advantages',
    },
    'critic-loss': {
        'min instead of max in value clipping: the critic loss takes the pessimistic (larger) of the clipped and unclipped squared errors':
            'critic-loss/min-for-max',
        'clipping around values instead of old_values: v_clipped = old_values + clamp(values - old_values, -clip_range, clip_range) keeps the NEW value within clip_range of the OLD one':
            'critic-loss/clip-around-values',
        'the 0.5 factor is missing: the value loss is half the mean squared error':
            'critic-loss/missing-half',
        'gradient flows into old_values and returns: they are fixed targets and must be detached':
            'critic-loss/grad-to-targets',
        'the mask is ignored: padded positions are averaged in as if they were tokens':
            'critic-loss/ignores-mask',
        "a row with no valid token gives 0/0 = NaN: clamp each row's token count to at least 1":
            'critic-loss/empty-row-nan',
        'token-mean instead of the masked mean per row then mean over the batch: pooling all valid tokens weighs long responses more':
            'critic-loss/token-mean',
        '`if clip_range:` treats clip_range=0.0 as no clipping: test `clip_range is not None`':
            'critic-loss/truthy-clip',
        'padding masked by multiplying after squaring: a large value at a padded position overflows to inf, and inf * 0 = NaN (select with torch.where before squaring instead)':
            'critic-loss/multiply-by-mask',
        'no shape check: a [B, 1] return (or mask) silently broadcasts against [B, T] values':
            'critic-loss/no-shape-check',
    },
    'token-rewards': {
        'wrong sign of the KL term: the reward is -kl_coef * (log_probs_old - ref_log_probs), a penalty for drifting from the reference, not a bonus':
            'token-rewards/wrong-kl-sign',
        'score added at the last position T - 1 instead of the last valid token of each row':
            'token-rewards/score-at-last-position',
        'the KL penalty is left on padded positions: padding must be 0':
            'token-rewards/padding-not-zeroed',
        'rewards not detached: they are fixed targets for PPO and must carry no gradient':
            'token-rewards/not-detached',
        'off by one: the score lands at index sum(mask) (the first padded position), not sum(mask) - 1':
            'token-rewards/score-off-by-one',
        'a row with no valid token gets its score at index -1 (sum(mask) - 1 wraps around to T - 1); such a row must stay all 0':
            'token-rewards/empty-row-wraps',
        'the score is added to every valid token instead of only the last one':
            'token-rewards/score-on-every-token',
        'kl_coef hard-coded to 0.1 instead of using the argument':
            'token-rewards/fixed-kl-coef',
        'no shape check on scores: a [B, 1] (or wrong-length) scores tensor is silently reshaped':
            'token-rewards/no-scores-shape-check',
    },
    'pairwise-loss': {
        'log(sigmoid(x)) instead of logsigmoid(x): sigmoid underflows to 0 for large negative gaps, so the loss becomes inf':
            'pairwise-loss/log-of-sigmoid',
        'margin with the wrong sign: adding it makes the pair easier, but the chosen reward must beat the rejected one by the margin':
            'pairwise-loss/margin-added',
        'margin ignored: the margin argument is never subtracted from the gap':
            'pairwise-loss/margin-ignored',
        'chosen and rejected swapped: the loss rewards preferring the rejected answer':
            'pairwise-loss/swapped',
        'sum instead of mean over the pairs':
            'pairwise-loss/sum-not-mean',
        'dividing the sum by len(x), the first dimension only, instead of averaging over every element':
            'pairwise-loss/divide-by-len',
        'no shape check: [B, 1] rewards against [B] silently broadcast into a [B, B] matrix of pairs':
            'pairwise-loss/no-shape-check',
    },
    'whiten': {
        "biased variance: dividing by n instead of n - 1 (the contract asks for Bessel's correction)":
            'whiten/biased-variance',
        'statistics over padding: the mean and variance include the padded positions instead of the valid ones only':
            'whiten/stats-over-padding',
        'masked sums divided by the total number of elements instead of the number of valid ones':
            'whiten/count-all-elements',
        'shift_mean=False ignored: the mean must be added back after scaling when shift_mean is False':
            'whiten/mean-not-added-back',
        'eps outside the square root: dividing by (std + eps) instead of multiplying by rsqrt(var + eps)':
            'whiten/eps-outside-sqrt',
        'no eps at all: dividing by the bare standard deviation, so constant values give 0 / 0 = NaN':
            'whiten/no-eps',
        'one-pass variance E[x^2] - E[x]^2: catastrophic cancellation when the values are large and nearly equal':
            'whiten/one-pass-variance',
        'no check for fewer than two valid values: the unbiased variance divides by n - 1 = 0 and the result is NaN':
            'whiten/no-count-check',
        'no shape check: a mask of another shape silently broadcasts against values':
            'whiten/no-shape-check',
    },
    'kl-penalty': {
        'k1 with the wrong sign: the log-ratio is log_probs - ref_log_probs (policy over reference)':
            'kl-penalty/k1-wrong-sign',
        'k2 without the factor 0.5: k2 = 0.5 * (log-ratio)^2':
            'kl-penalty/k2-missing-half',
        'k3 with the ratio inverted: k3 uses exp(ref_log_probs - log_probs), the reference over the policy; exp(log_probs - ref_log_probs) estimates the reverse KL':
            'kl-penalty/k3-inverted-ratio',
        'k3 without the - 1: exp(d) - d - 1 is 0 when the policies agree; exp(d) - d is not':
            'kl-penalty/k3-missing-one',
        'computed from probabilities: exp(log_probs) underflows to 0 for log-probs near -200 (float32), so the ratio becomes 0 or inf; work with the difference of log-probs instead':
            'kl-penalty/via-probabilities',
        "k3 clamped to [-10, 10] (as some libraries' low_var_kl does): the estimator asked for is unclamped":
            'kl-penalty/k3-clamped',
        'an unknown kind silently falls back to k1 instead of raising ValueError':
            'kl-penalty/unknown-kind-fallback',
        'reduced to a mean: the estimators are per token (elementwise), shaped like the inputs':
            'kl-penalty/reduced-to-mean',
        'no shape check: a [B, 1] or [T] ref_log_probs silently broadcasts against [B, T] log-probs':
            'kl-penalty/no-shape-check',
        'k3 as exp(r) - r - 1: for nearly equal log-probs (|r| < 1e-4) it rounds to 0 in float32; torch.expm1(r) - r keeps it exact':
            'kl-penalty/k3-without-expm1',
    },
    'grpo-advantages': {
        "normalising over the whole batch: the mean and std must be each group's (the answers to one prompt), not the batch's":
            'grpo-advantages/whole-batch',
        'strided groups: view(group_size, -1) groups scores i, i + N/G, ...; the groups are consecutive runs, view(-1, group_size)':
            'grpo-advantages/strided-groups',
        'biased std: dividing by G instead of G - 1 (the contract asks for the unbiased std)':
            'grpo-advantages/biased-std',
        'eps inside the square root: sqrt(var + eps) instead of std + eps':
            'grpo-advantages/eps-inside-sqrt',
        'no eps: dividing by the bare std instead of (std + eps); a nearly tied group blows up':
            'grpo-advantages/no-eps',
        'result not flattened: the [N // group_size, group_size] view is returned instead of a [N] tensor':
            'grpo-advantages/not-flattened',
        'no check that N is a multiple of group_size: the reshape fails with a RuntimeError instead of a ValueError':
            'grpo-advantages/no-value-error',
        'a group of equal scores is not detected: its float mean is a rounding step off, and that step divided by eps comes back as a large advantage instead of 0':
            'grpo-advantages/constant-group-not-detected',
    },
    'dpo-loss': {
        'rewards not detached: the returned chosen/rejected rewards still carry gradient into the policy':
            'dpo-loss/rewards-not-detached',
        'policy and reference swapped: the implicit reward is beta * (policy - reference), not reference - policy':
            'dpo-loss/ref-policy-swapped',
        'beta missing from the loss: the sigmoid gets the raw log-ratio difference instead of beta times it':
            'dpo-loss/beta-missing',
        'log(sigmoid(x)) instead of logsigmoid(x): sigmoid underflows to 0 for large negative reward gaps, so the loss becomes inf':
            'dpo-loss/log-of-sigmoid',
        'chosen and rejected swapped in the loss: it pushes the policy towards the rejected answers':
            'dpo-loss/chosen-rejected-swapped',
        'reference model ignored: the rewards use the policy log-probs alone instead of the log-ratio to the reference':
            'dpo-loss/reference-ignored',
        'loss computed from the detached rewards: no gradient reaches the policy, so it never learns':
            'dpo-loss/loss-from-detached',
        'no shape check: a [B, 1] log-prob tensor silently broadcasts against [B] ones':
            'dpo-loss/no-shape-check',
    },
    'ppo-memory': {
        "sharding the frozen models: ZeRO partitions only the trainable models' states; the Reward Model and Reference keep full weights on every GPU":
            'ppo-memory/shard-frozen',
        'sharding weights at ZeRO stage 2: stage 2 shards optimizer state and grads; only stage 3 also shards the weights':
            'ppo-memory/weights-sharded-at-stage2',
        'rounding sharded bytes down (floor division): a GPU must hold the largest shard, so divide and round up':
            'ppo-memory/round-down',
        'forgetting the gradients: a trainable model holds weights, grads and optimizer state':
            'ppo-memory/forget-grads',
        'giving the frozen Reward Model and Reference grads and optimizer state: they only run forward passes and hold weights only':
            'ppo-memory/frozen-as-trainable',
        'total over all GPUs instead of per GPU: total_per_gpu is what one GPU holds, not that times num_gpus':
            'ppo-memory/total-not-per-gpu',
        'ZeRO stages taken one at a time: each stage adds to the previous one (stage 2 shards optimizer state and grads, stage 3 all three)':
            'ppo-memory/non-cumulative-stages',
        'byte sizes hard-coded to 2/2/12 instead of using weight_bytes, grad_bytes and optimizer_bytes':
            'ppo-memory/fixed-bytes',
        'true division without rounding up: sharded bytes come out as fractional floats instead of whole bytes':
            'ppo-memory/true-division',
        'no validation of the parameter counts: a negative or fractional count must raise ValueError, not produce a ledger':
            'ppo-memory/no-validation',
    },
}


def upgrade() -> None:
    """Add the two nullable id columns, backfill them from today's wording, swap the index."""
    with op.batch_alter_table("check_results") as batch:
        batch.add_column(sa.Column("check_id", sa.String(length=ID_LENGTH), nullable=True))
        batch.add_column(sa.Column("mistake_id", sa.String(length=ID_LENGTH), nullable=True))
        batch.drop_index(_OLD_INDEX)
        batch.create_index(_NEW_INDEX, ["submission_id", "check_id", "name", "passed"])
    _backfill()


def _backfill() -> None:
    """One correlated UPDATE per column through a mapping table (the same SQL on SQLite and
    PostgreSQL): a row's exercise and stored text give its id, or NULL."""
    mapping = op.create_table(
        _MAP,
        sa.Column("exercise", sa.String(length=64), primary_key=True),
        sa.Column("kind", sa.String(length=8), primary_key=True),
        sa.Column("text", sa.String(length=1000), primary_key=True),
        sa.Column("id", sa.String(length=ID_LENGTH), nullable=False),
    )
    rows = [{"exercise": ex, "kind": "check", "text": text, "id": id_}
            for ex, sentences in CHECKS.items() for text, id_ in sentences.items()]
    rows += [{"exercise": ex, "kind": "mistake", "text": text, "id": id_}
             for ex, titles in MISTAKES.items() for text, id_ in titles.items()]
    op.bulk_insert(mapping, rows)
    for column, kind, text_column in (("check_id", "check", "name"), ("mistake_id", "mistake", "misconception")):
        op.execute(sa.text(
            f"UPDATE check_results SET {column} = ("
            f" SELECT m.id FROM {_MAP} m JOIN submissions s ON s.exercise = m.exercise"
            f" WHERE s.id = check_results.submission_id AND m.kind = '{kind}' AND m.text = check_results.{text_column})"
            f" WHERE {text_column} IS NOT NULL"
        ))
    op.drop_table(_MAP)


def downgrade() -> None:
    """Drop the ids; the sentences and titles were kept all along."""
    with op.batch_alter_table("check_results") as batch:
        batch.drop_index(_NEW_INDEX)
        batch.create_index(_OLD_INDEX, ["submission_id", "name", "passed"])
        batch.drop_column("mistake_id")
        batch.drop_column("check_id")
