"""The blind corpus, as authored: each wrong file is a correct file plus 1-3 mistakes.

FILES[slug] lists the wrong files of an exercise in authoring order (sub01, sub02, ...); each
is (correct file it starts from, [mistakes]). A mistake is its id (the author's vocabulary,
shared across exercises), its family, plain words, the text edits that make it (old -> new,
each `old` unique in the correct file), and the probes of probes.py that it must fail when it
is applied alone to the correct file. build.py writes the files and labels.json from this;
prove.py checks both against it.

Files come in pairs (sub01/sub02, sub03/sub04, ...) of the same number of mistakes and, as far
as the exercise allows, the same families: the split sends one of each pair to dev and the
other to heldout (see build.py and README.md).
"""

# The entries are kept compact, one mistake per few lines, rather than formatter-expanded.
# fmt: off

FAMILIES = ("gradient-path", "aggregation", "numerics", "contract", "masking", "other")


def M(id, family, what, edits, checks):
    assert family in FAMILIES, family
    return {"id": id, "family": family, "what": what, "edits": list(edits), "checks": list(checks)}


FILES = {}

# ----------------------------------------------------------------------------------------------
FILES["actor-loss"] = [
    ("a_min_clamp.py", [
        M("detach-clipped-branch", "gradient-path",
          "the ratio inside the clamp is detached, so inside the clip range (where both terms tie) half of the gradient is lost",
          [("torch.clamp(ratio, 1.0 - clip_range", "torch.clamp(ratio.detach(), 1.0 - clip_range")],
          ["grad"]),
    ]),
    ("b_max_of_negated.py", [
        M("detach-unclipped-branch", "gradient-path",
          "the unclipped term uses a detached ratio, so the gradient is halved inside the range and lost where the unclipped term is the minimum",
          [("    surr1 = -advantages * ratio\n", "    surr1 = -advantages * ratio.detach()\n")],
          ["grad"]),
    ]),
    ("c_where_on_sign.py", [
        M("no-shape-check", "contract",
          "no shape validation: a [B, 1] or [T] advantage (or log_probs_old) is broadcast instead of raising ValueError",
          [('    if log_probs_old.shape != log_probs_new.shape:\n        raise ValueError("log_probs_old and log_probs_new must have the same shape")\n'
            '    if advantages.shape != log_probs_new.shape:\n        raise ValueError("advantages and log_probs_new must have the same shape")\n\n', "")],
          ["shape_error"]),
    ]),
    ("b_max_of_negated.py", [
        M("float64-copies", "contract",
          "all inputs are upcast to float64 and the loss cast back: values are right but the peak memory on the large input is far over budget",
          [("    log_ratio = log_probs_new - log_probs_old.detach()\n",
            "    dtype = log_probs_new.dtype\n"
            "    log_probs_new, log_probs_old, advantages = log_probs_new.double(), log_probs_old.double(), advantages.double()\n"
            "    log_ratio = log_probs_new - log_probs_old.detach()\n"),
           ("    return loss.mean()\n", "    return loss.mean().to(dtype)\n")],
          ["memory"]),
    ]),
    ("d_minimum_maximum.py", [
        M("reduce-before-min", "aggregation",
          "the two surrogate terms are averaged first and the minimum is taken of the two means, not per element",
          [("    surrogate = torch.minimum(ratio * advantages, clipped_ratio * advantages)\n    return -(surrogate.sum() / ratio.numel())\n",
            "    surrogate = torch.minimum((ratio * advantages).mean(), (clipped_ratio * advantages).mean())\n    return -surrogate\n")],
          ["values"]),
    ]),
    ("c_where_on_sign.py", [
        M("divide-by-batch-size", "aggregation",
          "the summed objective is divided by the size of the first dimension instead of the number of elements",
          [("    return -objective.mean()\n", "    return -objective.sum() / objective.shape[0]\n")],
          ["values"]),
    ]),
    ("a_min_clamp.py", [
        M("clip-range-ignored", "other",
          "the clamp bounds are hard-coded to 0.8 and 1.2, so clip_range has no effect",
          [("1.0 - clip_range, 1.0 + clip_range", "0.8, 1.2")],
          ["values_clip_range"]),
        M("detach-clipped-branch", "gradient-path",
          "the ratio inside the clamp is detached, so inside the clip range half of the gradient is lost",
          [("torch.clamp(ratio, ", "torch.clamp(ratio.detach(), ")],
          ["grad"]),
    ]),
    ("d_minimum_maximum.py", [
        M("log-ratio-clamped", "numerics",
          "the log-ratio is clamped to [-20, 20] before exp 'for stability', which changes the loss for large log-ratios",
          [("    ratio = (log_probs_new - log_probs_old).exp()\n", "    ratio = (log_probs_new - log_probs_old).clamp(-20.0, 20.0).exp()\n")],
          ["large_log_ratio"]),
        M("max-instead-of-min", "other",
          "the optimistic maximum of the two surrogate terms is taken instead of the minimum",
          [("    surrogate = torch.minimum(ratio * advantages", "    surrogate = torch.maximum(ratio * advantages")],
          ["values"]),
    ]),
    ("c_where_on_sign.py", [
        M("normalises-advantages", "aggregation",
          "the advantages are whitened (mean 0, std 1) inside the loss, which the formula does not do",
          [("    ratio = torch.exp(log_probs_new - log_probs_old)\n",
            "    advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)\n"
            "    ratio = torch.exp(log_probs_new - log_probs_old)\n")],
          ["values"]),
        M("result-cast-to-float32", "contract",
          "the loss is cast with .float(), so float64 (and bfloat16) inputs get a float32 result",
          [("    return -objective.mean()\n", "    return -objective.mean().float()\n")],
          ["dtype_and_dim"]),
    ]),
    ("b_max_of_negated.py", [
        M("inplace-edit-of-input", "contract",
          "advantages are negated in place (advantages.neg_()), which changes the caller's tensor",
          [("    surr1 = -advantages * ratio\n    surr2 = -advantages * ratio.clamp",
            "    advantages.neg_()\n    surr1 = advantages * ratio\n    surr2 = advantages * ratio.clamp")],
          ["no_inplace"]),
        M("sum-instead-of-mean", "aggregation",
          "the per-element losses are summed instead of averaged",
          [("    return loss.mean()\n", "    return loss.sum()\n")],
          ["values"]),
    ]),
    ("d_minimum_maximum.py", [
        M("partial-shape-check", "contract",
          "only the advantages' shape is checked: a log_probs_old of another (broadcastable) shape is accepted",
          [("    if not (log_probs_new.shape == log_probs_old.shape == advantages.shape):\n",
            "    if advantages.shape != log_probs_new.shape:\n")],
          ["shape_error"]),
        M("upper-clip-only", "other",
          "the ratio is only clipped from above (min with 1 + eps), never from below",
          [("    clipped_ratio = torch.minimum(torch.maximum(ratio, low), high)\n", "    clipped_ratio = torch.minimum(ratio, high)\n")],
          ["clipped_side"]),
        M("ratio-from-probabilities", "numerics",
          "the ratio is computed as exp(new) / exp(old), which is 0/0 = NaN for log-probs below about -104 in float32",
          [("    ratio = (log_probs_new - log_probs_old).exp()\n", "    ratio = log_probs_new.exp() / log_probs_old.exp()\n")],
          ["low_log_probs"]),
    ]),
    ("a_min_clamp.py", [
        M("ratio-inverted", "other",
          "the ratio is exp(old - new) instead of exp(new - old)",
          [("log_probs_new - log_probs_old)\n", "log_probs_old - log_probs_new)\n")],
          ["values"]),
        M("float64-copies", "contract",
          "the inputs are upcast to float64 and the loss cast back: the peak memory on the large input is far over budget",
          [("    ratio = torch.exp(",
            "    out_dtype = log_probs_new.dtype\n"
            "    log_probs_new, log_probs_old, advantages = log_probs_new.double(), log_probs_old.double(), advantages.double()\n"
            "    ratio = torch.exp("),
           ("    return -torch.min(pg_loss1, pg_loss2).mean()\n", "    return -torch.min(pg_loss1, pg_loss2).mean().to(out_dtype)\n")],
          ["memory"]),
        M("detach-unclipped-branch", "gradient-path",
          "the unclipped term uses a detached ratio, so gradient is lost where the unclipped term is the minimum and halved inside the range",
          [("    pg_loss1 = ratio * advantages\n", "    pg_loss1 = ratio.detach() * advantages\n")],
          ["grad"]),
    ]),
]

# ----------------------------------------------------------------------------------------------
FILES["masked-actor-loss"] = [
    ("a_where.py", [
        M("exp-before-mask", "numerics",
          "exp is taken of the unmasked log-ratio and only the per-token loss is masked: the loss is finite but the gradient is NaN where padded log-ratios overflow",
          [("    log_ratio = torch.where(valid, log_probs_new - log_probs_old, zeros)\n    ratio = torch.exp(log_ratio)\n",
            "    ratio = torch.exp(log_probs_new - log_probs_old)\n")],
          ["padding_overflow"]),
    ]),
    ("b_masked_fill.py", [
        M("mask-by-multiplication", "masking",
          "padding is removed by multiplying the per-token loss by the mask after exp of the unmasked log-ratio, so an overflowing padded ratio gives inf * 0 = NaN",
          [("    log_ratio = (log_probs_new - log_probs_old).masked_fill(pad, 0.0)\n",
            "    log_ratio = log_probs_new - log_probs_old\n")],
          ["padding_overflow"]),
    ]),
    ("c_row_loop.py", [
        M("row-mean-over-T", "aggregation",
          "each row's sum is divided by the padded length T instead of the row's number of valid tokens",
          [("            rows.append(per_token[b][valid[b]].sum() / n_b)\n",
            "            rows.append(per_token[b][valid[b]].sum() / per_token.shape[1])\n")],
          ["seq_mean_values"]),
    ]),
    ("a_where.py", [
        M("empty-rows-dropped", "aggregation",
          "rows with no valid token are left out of the batch mean instead of counting as 0 (and a batch with none gives NaN)",
          [("    return row_mean.mean()\n", "    return row_mean[valid.any(dim=1)].mean()\n")],
          ["edge_rows"]),
    ]),
    ("b_masked_fill.py", [
        M("inplace-edit-of-input", "contract",
          "advantages are zeroed at padding with masked_fill_, editing the caller's tensor in place",
          [("    adv = advantages.masked_fill(pad, 0.0)\n", "    adv = advantages.masked_fill_(pad, 0.0)\n")],
          ["no_inplace"]),
    ]),
    ("c_row_loop.py", [
        M("unknown-mode-accepted", "contract",
          "loss_agg_mode is never validated: any mode other than 'token-mean' silently gives seq-mean-token-mean",
          [('    if loss_agg_mode not in MODES:\n        raise ValueError(f"loss_agg_mode should be one of {MODES}, not {loss_agg_mode!r}")\n', "")],
          ["mode_error"]),
    ]),
    ("a_where.py", [
        M("detach-clipped-branch", "gradient-path",
          "the ratio inside the clamp is detached, so inside the clip range half of the gradient is lost",
          [("torch.clamp(ratio, 1.0 - clip_range", "torch.clamp(ratio.detach(), 1.0 - clip_range")],
          ["grad_both_modes"]),
        M("token-mean-over-all-positions", "aggregation",
          "token-mean divides by every position of the batch (B * T), padding included, instead of the valid-token count",
          [("        return per_token.sum() / valid.sum().clamp(min=1)\n", "        return per_token.sum() / per_token.numel()\n")],
          ["token_mean_values"]),
    ]),
    ("b_masked_fill.py", [
        M("float32-mask", "contract",
          "the mask is converted with .float(), so bfloat16 inputs with a mask get a float32 loss",
          [("        mask = action_mask.to(log_probs_new.dtype)\n", "        mask = action_mask.float()\n")],
          ["dtype_and_dim"]),
        M("modes-swapped", "aggregation",
          "the two aggregation branches are swapped: 'seq-mean-token-mean' computes token-mean and the other way round",
          [('    if loss_agg_mode == "seq-mean-token-mean":\n', '    if loss_agg_mode == "token-mean":\n'),
           ('    elif loss_agg_mode == "token-mean":\n', '    elif loss_agg_mode == "seq-mean-token-mean":\n')],
          ["seq_mean_values", "token_mean_values"]),
    ]),
    ("c_row_loop.py", [
        M("float-mask-as-condition", "masking",
          "the mask is used as given as the condition of torch.where and as an index, so a float 0/1 mask raises instead of working",
          [("    valid = torch.ones_like(log_probs_new, dtype=torch.bool) if action_mask is None else action_mask != 0\n",
            "    valid = torch.ones_like(log_probs_new, dtype=torch.bool) if action_mask is None else action_mask\n")],
          ["seq_mean_values", "mask_kinds"]),
        M("empty-batch-nan", "aggregation",
          "token-mean divides by the valid count without a floor, so a batch with no valid token gives NaN instead of 0",
          [("        return per_token.sum() / max(n, 1)\n", "        return per_token.sum() / n\n")],
          ["edge_rows"]),
    ]),
    ("a_where.py", [
        M("default-mask-on-cpu", "contract",
          "with action_mask=None the all-valid mask is created with torch.ones(shape) on the default device, not on the inputs' device",
          [("        valid = torch.ones_like(log_probs_new, dtype=torch.bool)\n",
            "        valid = torch.ones(log_probs_new.shape, dtype=torch.bool)\n")],
          ["device_follows_inputs"]),
        M("empty-row-nan", "aggregation",
          "the per-row token count has no floor, so a row with no valid token gives 0/0 = NaN",
          [("    row_mean = per_token.sum(dim=1) / valid.sum(dim=1).clamp(min=1)\n",
            "    row_mean = per_token.sum(dim=1) / valid.sum(dim=1)\n")],
          ["edge_rows"]),
    ]),
    ("b_masked_fill.py", [
        M("detach-unclipped-branch", "gradient-path",
          "the unclipped term uses a detached ratio, so gradient is lost where it is the larger loss and halved inside the range",
          [("    token_loss = torch.max(-adv * ratio, ", "    token_loss = torch.max(-adv * ratio.detach(), ")],
          ["grad_both_modes"]),
        M("clip-range-ignored", "other",
          "the clamp bounds are hard-coded to 0.8 and 1.2, so clip_range has no effect",
          [("ratio.clamp(1 - clip_range, 1 + clip_range)", "ratio.clamp(0.8, 1.2)")],
          ["clip_range_values"]),
        M("mask-shape-unchecked", "contract",
          "action_mask's shape is not checked: a [B, 1] or [T] mask is broadcast instead of raising ValueError",
          [('    if action_mask is not None and action_mask.shape != shape:\n        raise ValueError(f"action_mask: expected shape {tuple(shape)}, got {tuple(action_mask.shape)}")\n', "")],
          ["shape_error"]),
    ]),
    ("c_row_loop.py", [
        M("inplace-edit-of-input", "contract",
          "padded advantages are zeroed by assigning into the caller's tensor (advantages[~valid] = 0)",
          [("    adv = torch.where(valid, advantages, torch.zeros_like(advantages))\n",
            "    advantages[~valid] = 0.0\n    adv = advantages\n")],
          ["no_inplace"]),
        M("token-mean-over-all-positions", "aggregation",
          "token-mean counts every position (padding included) in the denominator",
          [("        n = int(valid.sum())\n", "        n = valid.numel()\n")],
          ["token_mean_values"]),
        M("exp-before-mask", "numerics",
          "exp is taken of the unmasked log-ratio: the loss stays finite but the gradient is NaN where padded log-ratios overflow",
          [("    diff = torch.where(valid, log_probs_new - log_probs_old, torch.zeros_like(log_probs_new))\n    ratio = diff.exp()\n",
            "    ratio = (log_probs_new - log_probs_old).exp()\n")],
          ["padding_overflow"]),
    ]),
]

# ----------------------------------------------------------------------------------------------
_GAE_SCAN = (
    "    running = torch.zeros_like(deltas[:, 0])\n"
    "    steps = []\n"
    "    for t in reversed(range(rewards.shape[1])):\n"
    "        running = deltas[:, t] + gamma * lam * running\n"
    "        steps.append(running)\n"
    "    adv = torch.stack(steps[::-1], dim=1).masked_fill(~valid, 0.0)\n"
)

FILES["gae"] = [
    ("a_carry_loop.py", [
        M("bootstrap-from-padding", "masking",
          "values are not masked, so V_{t+1} after the last valid token is the value stored at the padded position instead of 0",
          [("        v = torch.where(valid, values, torch.zeros_like(values)).to(work)\n", "        v = values.to(work)\n")],
          ["no_bootstrap_from_padding", "advantages_values"]),
    ]),
    ("b_deltas_then_scan.py", [
        M("returns-not-zeroed-at-padding", "masking",
          "returns are advantages plus the raw values, so padded positions get the padded value instead of 0",
          [("    ret = (adv + v).masked_fill(~valid, 0.0)\n", "    ret = adv + values.to(acc)\n")],
          ["padding_is_zero"]),
    ]),
    ("c_python_rows.py", [
        M("lambda-without-gamma", "other",
          "the advantage recursion uses lam * A_{t+1} instead of gamma * lam * A_{t+1} (invisible at the default gamma = 1)",
          [("            next_adv = delta + gamma * lam * next_adv\n", "            next_adv = delta + lam * next_adv\n")],
          ["gamma_and_lam"]),
    ]),
    ("b_deltas_then_scan.py", [
        M("rewards-not-detached", "contract",
          "only values is detached: when rewards requires grad, both outputs require grad",
          [("    rewards = rewards.detach()\n", "")],
          ["detached"]),
    ]),
    ("a_carry_loop.py", [
        M("whitens-advantages", "aggregation",
          "the advantages are whitened over the valid tokens before returning, which GAE does not do",
          [("        returns = torch.where(valid, advantages + v, torch.zeros_like(v))\n",
            "        returns = torch.where(valid, advantages + v, torch.zeros_like(v))\n"
            "        mean = advantages[valid].mean()\n"
            "        std = advantages[valid].std()\n"
            "        advantages = torch.where(valid, (advantages - mean) / (std + 1e-8), torch.zeros_like(advantages))\n")],
          ["advantages_values"]),
    ]),
    ("c_python_rows.py", [
        M("results-in-default-dtype", "contract",
          "the outputs are built with torch.tensor(list) in the default float32, whatever the inputs' dtype",
          [("    advantages = torch.tensor(adv_rows, dtype=torch.float64).to(device=rewards.device, dtype=rewards.dtype)\n"
            "    returns = torch.tensor(ret_rows, dtype=torch.float64).to(device=rewards.device, dtype=rewards.dtype)\n",
            "    advantages = torch.tensor(adv_rows, device=rewards.device)\n"
            "    returns = torch.tensor(ret_rows, device=rewards.device)\n")],
          ["dtypes"]),
    ]),
    ("b_deltas_then_scan.py", [
        M("discount-matrix", "contract",
          "the backward scan is replaced by a [T, T] matrix of discount powers (deltas @ discount.T): right values, memory quadratic in T",
          [(_GAE_SCAN,
            "    T = rewards.shape[1]\n"
            "    idx = torch.arange(T, device=rewards.device)\n"
            "    gap = (idx[None, :] - idx[:, None]).clamp(min=0).to(acc)\n"
            "    discount = torch.where(idx[None, :] >= idx[:, None], (gamma * lam) ** gap, torch.zeros_like(gap))\n"
            "    adv = (deltas @ discount.T).masked_fill(~valid, 0.0)\n")],
          ["memory"]),
        M("delta-without-gamma", "other",
          "the TD error uses V_{t+1} undiscounted (r + V_{t+1} - V_t), which only shows when gamma != 1",
          [("    deltas = (r + gamma * next_v - v).masked_fill(~valid, 0.0)\n", "    deltas = (r + next_v - v).masked_fill(~valid, 0.0)\n")],
          ["gamma_and_lam"]),
    ]),
    ("b_deltas_then_scan.py", [
        M("discount-product-underflow", "numerics",
          "the advantages are a reversed cumsum of deltas * (gamma*lam)^t divided by (gamma*lam)^t, which underflows to 0/0 = NaN for long float32 rows",
          [(_GAE_SCAN,
            "    T = rewards.shape[1]\n"
            "    w = (gamma * lam) ** torch.arange(T, dtype=acc, device=rewards.device)\n"
            "    adv = torch.flip(torch.cumsum(torch.flip(deltas * w, [1]), 1), [1]) / w\n"
            "    adv = adv.masked_fill(~valid, 0.0)\n")],
          ["long_float32"]),
        M("values-not-detached", "contract",
          "values is not detached, so the returns (and advantages) require grad when values does",
          [("    values = values.detach()\n", "")],
          ["detached"]),
    ]),
    ("c_python_rows.py", [
        M("mask-shape-unchecked", "contract",
          "mask's shape is not checked; a [B, 1] or [T] mask crashes with IndexError/TypeError instead of a ValueError",
          [('    if mask is not None and mask.shape != rewards.shape:\n        raise ValueError(f"mask: expected shape {tuple(rewards.shape)}, got {tuple(mask.shape)}")\n', "")],
          ["shape_error"]),
        M("forward-recursion", "other",
          "the loop runs forward in time (t = 0 .. T-1), so each step uses the previous token's value and advantage instead of the next one's",
          [("        for t in range(n_steps - 1, -1, -1):\n", "        for t in range(n_steps):\n")],
          ["advantages_values"]),
    ]),
    ("a_carry_loop.py", [
        M("carry-on-default-device", "contract",
          "the carried V_{t+1} starts as torch.zeros(B) on the default device, not on the inputs' device",
          [("        next_value = torch.zeros(B, dtype=work, device=rewards.device)\n", "        next_value = torch.zeros(B, dtype=work)\n")],
          ["device_follows_inputs"]),
        M("half-precision-recurrence", "numerics",
          "the recursion runs in the inputs' dtype, so bfloat16 advantages of long rows drift beyond the bfloat16 tolerance",
          [("        work = torch.float32 if rewards.dtype in (torch.float16, torch.bfloat16) else rewards.dtype\n",
            "        work = rewards.dtype\n")],
          ["bf16_long"]),
    ]),
    ("a_carry_loop.py", [
        M("inplace-edit-of-input", "contract",
          "padded values are zeroed with values.masked_fill_ under no_grad, editing the caller's tensor",
          [("        v = torch.where(valid, values, torch.zeros_like(values)).to(work)\n",
            "        v = values.masked_fill_(~valid, 0.0).to(work)\n")],
          ["no_inplace"]),
        M("delta-discounted-by-lambda", "other",
          "the TD error discounts V_{t+1} by gamma * lam instead of gamma",
          [("            delta = r[:, t] + gamma * next_value - v[:, t]\n", "            delta = r[:, t] + gamma * lam * next_value - v[:, t]\n")],
          ["advantages_values"]),
        M("mask-shape-unchecked", "contract",
          "mask's shape is not checked; a [B, 1] or [T] mask fails with IndexError instead of a ValueError",
          [('    if mask is not None and mask.shape != rewards.shape:\n        raise ValueError(f"mask has shape {tuple(mask.shape)}, expected the shape of rewards {tuple(rewards.shape)}")\n', "")],
          ["shape_error"]),
    ]),
    ("c_python_rows.py", [
        M("bootstrap-from-padding", "masking",
          "at a padded position the carried V_{t+1} is set to the padded value instead of 0, so the last valid token bootstraps from padding",
          [("            if not valid[b][t]:\n                next_value = 0.0\n",
            "            if not valid[b][t]:\n                next_value = v_rows[b][t]\n")],
          ["no_bootstrap_from_padding"]),
        M("returns-are-reward-to-go", "other",
          "returns are the discounted sum of rewards (Monte Carlo return) instead of advantages + values",
          [("            ret[t] = next_adv + v_rows[b][t]\n",
            "            ret[t] = r_rows[b][t] + gamma * (ret[t + 1] if t + 1 < n_steps else 0.0)\n")],
          ["returns_values"]),
        M("values-shape-unchecked", "contract",
          "values' shape is not checked; a [B, 1] values tensor crashes with IndexError instead of a ValueError",
          [('    if values.shape != rewards.shape:\n        raise ValueError(f"values: expected shape {tuple(rewards.shape)}, got {tuple(values.shape)}")\n', "")],
          ["shape_error"]),
    ]),
]

# ----------------------------------------------------------------------------------------------
FILES["critic-loss"] = [
    ("a_where.py", [
        M("targets-not-detached", "gradient-path",
          "old_values and returns are used without detach, so they receive gradient when they require grad",
          [("    old = torch.where(valid, old_values.detach(), zeros)\n    ret = torch.where(valid, returns.detach(), zeros)\n",
            "    old = torch.where(valid, old_values, zeros)\n    ret = torch.where(valid, returns, zeros)\n")],
          ["no_grad_to_targets"]),
    ]),
    ("b_clamp_bounds.py", [
        M("detach-clipped-branch", "gradient-path",
          "the values inside the clamp are detached, so inside the clip range (where both errors tie) half of the gradient is lost",
          [("        clipped = torch.clamp(values, ", "        clipped = torch.clamp(values.detach(), ")],
          ["grad_values"]),
    ]),
    ("c_row_loop.py", [
        M("min-instead-of-max", "other",
          "the smaller of the clipped and unclipped squared errors is kept instead of the larger",
          [("            err = torch.max(err, (v_clip - ret) ** 2)\n", "            err = torch.min(err, (v_clip - ret) ** 2)\n")],
          ["clipped_values"]),
    ]),
    ("a_where.py", [
        M("truthy-clip-range", "other",
          "clipping is switched on with `if clip_range:`, so clip_range=0.0 turns clipping off instead of pinning values to old_values",
          [("    if clip_range is not None:\n", "    if clip_range:\n")],
          ["clip_zero"]),
    ]),
    ("b_clamp_bounds.py", [
        M("mask-by-multiplication", "masking",
          "values are not zeroed at padding and the squared error is multiplied by the mask, so a padded value near 1e20 squares to inf and inf * 0 = NaN",
          [("    values = values.masked_fill(pad, 0.0)\n", "")],
          ["padding_huge"]),
    ]),
    ("c_row_loop.py", [
        M("token-mean-instead-of-row-mean", "aggregation",
          "the squared errors of all valid tokens of the batch are averaged together instead of per row then over rows",
          [("        row_losses.append(err.sum() / max(v.numel(), 1))\n    return 0.5 * torch.stack(row_losses).mean()\n",
            "        row_losses.append(err.sum())\n    return 0.5 * torch.stack(row_losses).sum() / max(int(valid.sum()), 1)\n")],
          ["unclipped_values"]),
    ]),
    ("a_where.py", [
        M("clip-around-returns", "other",
          "the new value is clipped around the returns instead of around old_values",
          [("        v_clipped = old + torch.clamp(v - old, -clip_range, clip_range)\n",
            "        v_clipped = ret + torch.clamp(v - ret, -clip_range, clip_range)\n")],
          ["clipped_values"]),
        M("mask-shape-unchecked", "contract",
          "mask is left out of the shape check, so a [B, 1] or [T] mask is broadcast instead of raising ValueError",
          [('    for name, other in (("old_values", old_values), ("returns", returns), ("mask", mask)):\n',
            '    for name, other in (("old_values", old_values), ("returns", returns)):\n')],
          ["shape_error"]),
    ]),
    ("b_clamp_bounds.py", [
        M("float32-mask", "contract",
          "the mask is converted with .float(), so bfloat16 values get a float32 loss",
          [("    m = torch.ones_like(values) if mask is None else mask.to(values.dtype)\n",
            "    m = torch.ones_like(values) if mask is None else mask.float()\n")],
          ["dtype_and_dim"]),
        M("missing-half", "other",
          "the loss is not multiplied by 0.5",
          [("    return 0.5 * per_row.mean()\n", "    return per_row.mean()\n")],
          ["unclipped_values"]),
    ]),
    ("c_row_loop.py", [
        M("inplace-edit-of-input", "contract",
          "padded returns and old_values are zeroed in place with masked_fill_ on the caller's tensors",
          [("    row_losses = []\n",
            "    returns.masked_fill_(~valid, 0.0)\n    old_values.masked_fill_(~valid, 0.0)\n    row_losses = []\n")],
          ["no_inplace"]),
        M("empty-row-nan", "aggregation",
          "each row's loss is err.mean(), so a row with no valid token gives NaN instead of 0",
          [("        row_losses.append(err.sum() / max(v.numel(), 1))\n", "        row_losses.append(err.mean())\n")],
          ["edge_rows"]),
    ]),
    ("a_where.py", [
        M("mean-over-batch-dim", "aggregation",
          "the masked mean is taken over dim=0 (per position across the batch), then over positions, instead of per row then over rows",
          [("    row_mean = per_token.sum(dim=1) / valid.sum(dim=1).clamp(min=1)\n",
            "    row_mean = per_token.sum(dim=0) / valid.sum(dim=0).clamp(min=1)\n")],
          ["unclipped_values"]),
        M("detach-clipped-branch", "gradient-path",
          "the clamped difference uses detached values, so inside the clip range half of the gradient is lost",
          [("torch.clamp(v - old, -clip_range", "torch.clamp(v.detach() - old, -clip_range")],
          ["grad_values"]),
    ]),
    ("b_clamp_bounds.py", [
        M("targets-not-detached", "gradient-path",
          "old_values and returns are not detached, so they receive gradient when they require grad",
          [("    old_values = old_values.detach().masked_fill(pad, 0.0)\n    returns = returns.detach().masked_fill(pad, 0.0)\n",
            "    old_values = old_values.masked_fill(pad, 0.0)\n    returns = returns.masked_fill(pad, 0.0)\n")],
          ["no_grad_to_targets"]),
        M("truthy-clip-range", "other",
          "clipping is switched on with `if clip_range:`, so clip_range=0.0 does not clip",
          [("    if clip_range is not None:\n", "    if clip_range:\n")],
          ["clip_zero"]),
        M("returns-shape-unchecked", "contract",
          "returns' shape is not checked: a [B, 1] returns tensor is broadcast instead of raising ValueError",
          [('    if returns.shape != values.shape:\n        raise ValueError(f"returns: shape {tuple(returns.shape)} != values {tuple(values.shape)}")\n', "")],
          ["shape_error"]),
    ]),
    ("c_row_loop.py", [
        M("detach-clipped-branch", "gradient-path",
          "the clamped difference uses detached values, so inside the clip range half of the gradient is lost",
          [("            v_clip = old + (v - old).clamp(-clip_range, clip_range)\n",
            "            v_clip = old + (v.detach() - old).clamp(-clip_range, clip_range)\n")],
          ["grad_values"]),
        M("empty-rows-dropped", "aggregation",
          "rows with no valid token are left out of the batch mean instead of counting as 0",
          [("    return 0.5 * torch.stack(row_losses).mean()\n",
            "    return 0.5 * torch.stack(row_losses).sum() / max(int((valid.sum(1) > 0).sum()), 1)\n")],
          ["edge_rows"]),
        M("old-values-shape-unchecked", "contract",
          "only returns' shape is checked: a [B, 1] old_values crashes with IndexError instead of a ValueError",
          [("    if old_values.shape != values.shape or returns.shape != values.shape:\n",
            "    if returns.shape != values.shape:\n")],
          ["shape_error"]),
    ]),
]

# ----------------------------------------------------------------------------------------------
_TOK_LOOP = (
    "        for b in range(B):\n"
    "            idx = valid[b].nonzero()\n"
    "            if idx.numel() > 0:\n"
    "                rewards[b, idx[-1, 0]] += scores[b]\n"
)

FILES["token-rewards"] = [
    ("b_row_loop.py", [
        M("score-at-last-position", "masking",
          "each row's score is added at position T - 1 instead of at the row's last valid token",
          [(_TOK_LOOP, "        rewards[:, -1] += scores\n")],
          ["score_at_last_valid"]),
    ]),
    ("a_scatter.py", [
        M("empty-row-gets-score", "masking",
          "rows with no valid token are not excluded, so their score lands at position 0",
          [("        bonus = torch.where((lengths > 0).unsqueeze(1), bonus, torch.zeros_like(bonus))\n", "")],
          ["edge_rows"]),
    ]),
    ("c_index_put.py", [
        M("rewards-not-detached", "contract",
          "the log-probs are not detached, so the rewards require grad when log_probs_old or ref_log_probs does",
          [("    log_ratio = (log_probs_old.detach() - ref_log_probs.detach())", "    log_ratio = (log_probs_old - ref_log_probs)")],
          ["detached"]),
    ]),
    ("a_scatter.py", [
        M("buffer-on-default-device", "contract",
          "the score buffer is created with torch.zeros(shape, dtype=...) on the default device, not on the inputs' device",
          [("        bonus = torch.zeros_like(rewards)\n", "        bonus = torch.zeros(rewards.shape, dtype=rewards.dtype)\n")],
          ["device_follows_inputs"]),
    ]),
    ("b_row_loop.py", [
        M("kl-sign-flipped", "other",
          "the KL term is added with a plus sign: +kl_coef * (log_probs_old - ref_log_probs)",
          [("        rewards[valid] = -kl_coef * kl[valid]\n", "        rewards[valid] = kl_coef * kl[valid]\n")],
          ["reward_values"]),
    ]),
    ("c_index_put.py", [
        M("kl-divided-by-length", "aggregation",
          "the per-token KL penalty is divided by the row's number of valid tokens, which the formula does not do",
          [("    rewards = -kl_coef * log_ratio\n", "    rewards = -kl_coef * log_ratio / valid.sum(-1, keepdim=True).clamp(min=1)\n")],
          ["reward_values"]),
    ]),
    ("a_scatter.py", [
        M("mask-by-multiplication", "masking",
          "padding is removed by multiplying the log-ratio by the mask, so huge padded log-probs give inf * 0 = NaN",
          [("        kl = torch.where(valid, log_probs_old - ref_log_probs, torch.zeros_like(log_probs_old))\n",
            "        kl = (log_probs_old - ref_log_probs) * valid\n")],
          ["huge_padding"]),
        M("kl-coef-hard-coded", "other",
          "the KL coefficient is hard-coded to 0.1, so kl_coef has no effect",
          [("        rewards = -kl_coef * kl\n", "        rewards = -0.1 * kl\n")],
          ["kl_coef_values"]),
    ]),
    ("b_row_loop.py", [
        M("scores-reshaped", "contract",
          "scores is only checked for B elements and reshaped, so a [B, 1] scores tensor is accepted instead of raising ValueError",
          [('    if scores.shape != (B,):\n        raise ValueError(f"scores must be [B] = [{B}], got {list(scores.shape)}")\n',
            '    if scores.numel() != B:\n        raise ValueError(f"scores must be [B] = [{B}], got {list(scores.shape)}")\n    scores = scores.reshape(B)\n')],
          ["shape_error"]),
        M("score-at-every-valid-token", "other",
          "the score is added to every valid token of the row instead of only the last one",
          [("                rewards[b, idx[-1, 0]] += scores[b]\n", "                rewards[b, idx[:, 0]] += scores[b]\n")],
          ["reward_values"]),
    ]),
    ("c_index_put.py", [
        M("padding-not-masked", "masking",
          "the KL penalty is not masked, so padded positions get -kl_coef * (garbage) instead of 0",
          [(".masked_fill(~valid, 0.0)\n    rewards = -kl_coef", "\n    rewards = -kl_coef")],
          ["padding_is_zero"]),
        M("scores-shape-loose", "contract",
          "only the first dimension of scores is checked: a [B, 1] scores tensor gets past the check and fails later with a RuntimeError",
          [("    if scores.shape != log_probs_old.shape[:1]:\n", "    if scores.shape[0] != log_probs_old.shape[0]:\n")],
          ["shape_error"]),
    ]),
    ("a_scatter.py", [
        M("score-at-last-position", "masking",
          "the score index is T - 1 for every row instead of the row's last valid token",
          [("        last = (lengths - 1).clamp(min=0)\n", "        last = torch.full_like(lengths, log_probs_old.shape[1] - 1)\n")],
          ["score_at_last_valid"]),
        M("mask-shape-unchecked", "contract",
          "mask's shape is not checked: a [B, 1] mask is broadcast instead of raising ValueError",
          [('    if mask is not None and mask.shape != log_probs_old.shape:\n        raise ValueError(f"mask has shape {tuple(mask.shape)}, expected {tuple(log_probs_old.shape)}")\n', "")],
          ["shape_error"]),
    ]),
    ("b_row_loop.py", [
        M("inplace-edit-of-input", "contract",
          "the padded log-probs are zeroed by assigning into the caller's tensors (log_probs_old[~valid] = 0)",
          [("        kl = log_probs_old - ref_log_probs\n",
            "        log_probs_old[~valid] = 0.0\n        ref_log_probs[~valid] = 0.0\n        kl = log_probs_old - ref_log_probs\n")],
          ["no_inplace"]),
        M("empty-row-crash", "masking",
          "the guard for rows with no valid token is missing, so such a row raises IndexError",
          [("            if idx.numel() > 0:\n                rewards[b, idx[-1, 0]] += scores[b]\n",
            "            rewards[b, idx[-1, 0]] += scores[b]\n")],
          ["edge_rows"]),
        M("result-in-default-dtype", "contract",
          "the rewards buffer is torch.zeros(B, T) in the default float32, so float64 and bfloat16 inputs fail when their values are written into it",
          [("        rewards = torch.zeros_like(log_probs_old)\n", "        rewards = torch.zeros(B, T, device=log_probs_old.device)\n")],
          ["dtypes"]),
    ]),
    ("c_index_put.py", [
        M("kl-sign-flipped", "other",
          "the log-ratio is taken as ref - old, so the KL term has the wrong sign",
          [("(log_probs_old.detach() - ref_log_probs.detach())", "(ref_log_probs.detach() - log_probs_old.detach())")],
          ["reward_values"]),
        M("score-one-past-last", "masking",
          "the score index is the row's length instead of length - 1: one past the last valid token (out of range for a full row)",
          [("        (rows, lengths[rows] - 1),", "        (rows, lengths[rows]),")],
          ["score_at_last_valid"]),
        M("mask-by-multiplication", "masking",
          "padding is removed by multiplying the log-ratio by the mask, so huge padded log-probs give inf * 0 = NaN",
          [(".masked_fill(~valid, 0.0)\n    rewards", " * m\n    rewards")],
          ["huge_padding"]),
    ]),
]

# ----------------------------------------------------------------------------------------------
_PAIR_SAFE = (
    "    pos = x >= 0\n"
    "    x_pos = torch.where(pos, x, torch.zeros_like(x))\n"
    "    x_neg = torch.where(pos, torch.zeros_like(x), x)\n"
    "    loss = torch.where(pos, torch.log1p(torch.exp(-x_pos)), -x_neg + torch.log1p(torch.exp(x_neg)))\n"
)

FILES["pairwise-loss"] = [
    ("c_safe_where.py", [
        M("abs-clamp-subgradient", "gradient-path",
          "the stable form max(-x, 0) + log1p(exp(-|x|)) is built from clamp and abs, whose subgradients at a gap of exactly 0 give -1 per pair instead of -0.5",
          [(_PAIR_SAFE, "    loss = torch.clamp(-x, min=0) + torch.log1p(torch.exp(-torch.abs(x)))\n")],
          ["grad_at_zero_gap"]),
    ]),
    ("a_logsigmoid.py", [
        M("relu-abs-subgradient", "gradient-path",
          "the stable form relu(-x) + log1p(exp(-|x|)) has zero subgradient at a gap of exactly 0 (relu and abs both give 0 there)",
          [("    return -F.logsigmoid(logits).mean()\n",
            "    return (F.relu(-logits) + torch.log1p(torch.exp(-logits.abs()))).mean()\n")],
          ["grad_at_zero_gap"]),
    ]),
    ("b_softplus.py", [
        M("margin-shape-unchecked", "contract",
          "a tensor margin's shape is not checked: a [1] or [B, 1] margin is broadcast instead of raising ValueError",
          [('        if torch.is_tensor(margin) and margin.ndim > 0 and margin.shape != diff.shape:\n            raise ValueError(f"margin must be a scalar or have shape {tuple(diff.shape)}")\n', "")],
          ["shape_error"]),
    ]),
    ("d_logaddexp.py", [
        M("truthy-margin", "other",
          "the margin is tested with `if not margin:`, which raises for a per-pair tensor margin (ambiguous truth value)",
          [("    if margin is None:\n        margin = 0.0\n", "    if not margin:\n        margin = 0.0\n")],
          ["tensor_margin"]),
    ]),
    ("a_logsigmoid.py", [
        M("log-of-sigmoid", "numerics",
          "the loss is -log(sigmoid(x)), which underflows to log(0) = inf for a gap of -200 in float32",
          [("    return -F.logsigmoid(logits).mean()\n", "    return -torch.log(torch.sigmoid(logits)).mean()\n")],
          ["large_gaps"]),
    ]),
    ("b_softplus.py", [
        M("sum-instead-of-mean", "aggregation",
          "the per-pair losses are summed instead of averaged",
          [("    return F.softplus(-diff).mean()\n", "    return F.softplus(-diff).sum()\n")],
          ["values_no_margin"]),
    ]),
    ("c_safe_where.py", [
        M("untaken-branch-overflow", "numerics",
          "both branches of the where see the raw gap, so exp overflows in the untaken branch: the loss is right but the gradient is NaN for large gaps",
          [("    x_pos = torch.where(pos, x, torch.zeros_like(x))\n"
            "    x_neg = torch.where(pos, torch.zeros_like(x), x)\n"
            "    loss = torch.where(pos, torch.log1p(torch.exp(-x_pos)), -x_neg + torch.log1p(torch.exp(x_neg)))\n",
            "    loss = torch.where(pos, torch.log1p(torch.exp(-x)), -x + torch.log1p(torch.exp(x)))\n")],
          ["large_gaps"]),
        M("margin-added", "other",
          "the margin is added to the gap instead of subtracted",
          [("        x = x - margin\n", "        x = x + margin\n")],
          ["scalar_margin"]),
    ]),
    ("d_logaddexp.py", [
        M("detach-rejected", "gradient-path",
          "rejected_rewards is detached, so no gradient reaches it",
          [("    gap = chosen_rewards - rejected_rewards - margin\n", "    gap = chosen_rewards - rejected_rewards.detach() - margin\n")],
          ["grad_both_inputs"]),
        M("mean-over-first-dim", "aggregation",
          "the losses are averaged over dim 0 only, so rewards with more than one dimension give a vector instead of the mean over every element",
          [(", -gap).mean()\n", ", -gap).mean(dim=0)\n")],
          ["any_shape"]),
    ]),
    ("a_logsigmoid.py", [
        M("inplace-edit-of-input", "contract",
          "the logits are built by subtracting in place from chosen_rewards (logits = chosen_rewards; logits -= ...), editing the caller's tensor",
          [("    logits = chosen_rewards - rejected_rewards\n    if margin is not None:\n        logits = logits - margin\n",
            "    logits = chosen_rewards\n    logits -= rejected_rewards\n    if margin is not None:\n        logits -= margin\n")],
          ["no_inplace"]),
        M("result-cast-to-float32", "contract",
          "the logits are cast with .float() before logsigmoid, so float64 and bfloat16 inputs get a float32 loss",
          [("    return -F.logsigmoid(logits).mean()\n", "    return -F.logsigmoid(logits.float()).mean()\n")],
          ["dtype_and_dim"]),
    ]),
    ("b_softplus.py", [
        M("zero-dim-margin-refused", "contract",
          "every tensor margin must have the rewards' shape, so a 0-dim tensor margin raises ValueError",
          [("        if torch.is_tensor(margin) and margin.ndim > 0 and margin.shape != diff.shape:\n",
            "        if torch.is_tensor(margin) and margin.shape != diff.shape:\n")],
          ["scalar_margin"]),
        M("log1p-exp-overflow", "numerics",
          "the loss is log1p(exp(-x)), whose exp overflows to inf for a gap of -200 in float32",
          [("    return F.softplus(-diff).mean()\n", "    return torch.log1p(torch.exp(-diff)).mean()\n")],
          ["large_gaps"]),
    ]),
    ("d_logaddexp.py", [
        M("gap-reversed", "other",
          "the gap is rejected - chosen instead of chosen - rejected",
          [("    gap = chosen_rewards - rejected_rewards - margin\n", "    gap = rejected_rewards - chosen_rewards - margin\n")],
          ["values_no_margin"]),
        M("margin-shape-unchecked", "contract",
          "a tensor margin's shape is not checked: a [1] or [B, 1] margin is broadcast instead of raising ValueError",
          [('    elif torch.is_tensor(margin) and margin.dim() != 0 and margin.shape != chosen_rewards.shape:\n        raise ValueError(f"margin of shape {tuple(margin.shape)} does not match the rewards")\n', "")],
          ["shape_error"]),
        M("divide-by-batch-size", "aggregation",
          "the summed loss is divided by len(gap) (the first dimension) instead of the number of elements",
          [(", -gap).mean()\n", ", -gap).sum() / len(gap)\n")],
          ["any_shape"]),
    ]),
    ("a_logsigmoid.py", [
        M("rejected-shape-unchecked", "contract",
          "rejected_rewards' shape is not checked: a [B, 1] or [1] tensor is broadcast instead of raising ValueError",
          [("    if rejected_rewards.shape != chosen_rewards.shape:\n        raise ValueError(\n"
            '            f"rejected_rewards has shape {tuple(rejected_rewards.shape)}, chosen_rewards {tuple(chosen_rewards.shape)}"\n'
            "        )\n", "")],
          ["shape_error"]),
        M("detach-chosen", "gradient-path",
          "chosen_rewards is detached in the gap, so no gradient reaches it",
          [("    logits = chosen_rewards - rejected_rewards\n", "    logits = chosen_rewards.detach() - rejected_rewards\n")],
          ["grad_both_inputs"]),
        M("number-margin-ignored", "other",
          "the margin is only applied when it is a tensor, so a Python number margin is silently ignored",
          [("    if margin is not None:\n        logits = logits - margin\n",
            "    if isinstance(margin, torch.Tensor):\n        logits = logits - margin\n")],
          ["scalar_margin"]),
    ]),
]

# ----------------------------------------------------------------------------------------------
FILES["whiten"] = [
    ("a_index_two_pass.py", [
        M("no-zero-spread-detection", "contract",
          "a constant input is not detected: when the float32 mean is a rounding step off (seven 0.1s), the result is tiny garbage instead of exactly 0",
          [("    if picked.max() == picked.min():\n        whitened = torch.zeros_like(x)\n    else:\n        whitened = (x - mean) * torch.rsqrt(var + eps)\n",
            "    whitened = (x - mean) * torch.rsqrt(var + eps)\n")],
          ["constant_is_zero"]),
    ]),
    ("b_where_sums.py", [
        M("zero-spread-by-variance", "contract",
          "zero spread is detected by var == 0, which misses a constant input whose float32 mean is a rounding step off",
          [('    lo = torch.where(m, x, torch.full_like(x, float("inf"))).min()\n'
            '    hi = torch.where(m, x, torch.full_like(x, float("-inf"))).max()\n'
            "    out = torch.where(lo == hi, ",
            "    out = torch.where(var == 0, ")],
          ["constant_is_zero"]),
    ]),
    ("c_var_mean.py", [
        M("biased-variance", "aggregation",
          "the variance is the biased one (divided by n, correction=0) instead of Bessel's n - 1",
          [("torch.var_mean(flat, correction=1)", "torch.var_mean(flat, correction=0)")],
          ["whitened_values", "bessel_few_values"]),
    ]),
    ("a_index_two_pass.py", [
        M("eps-outside-sqrt", "aggregation",
          "eps is added to the standard deviation instead of to the variance inside the square root",
          [("        whitened = (x - mean) * torch.rsqrt(var + eps)\n", "        whitened = (x - mean) / (torch.sqrt(var) + eps)\n")],
          ["eps_inside_sqrt"]),
    ]),
    ("b_where_sums.py", [
        M("sum-of-squares-variance", "numerics",
          "the variance is E[x^2] - E[x]^2 (sum of squares minus n * mean^2), which cancels catastrophically for near-constant values",
          [("    centered = torch.where(m, x - mean, torch.zeros_like(x))\n    var = (centered * centered).sum() / (count - 1)\n",
            "    var = (torch.where(m, x * x, torch.zeros_like(x)).sum() - count * mean * mean) / (count - 1)\n")],
          ["near_constant"]),
    ]),
    ("c_var_mean.py", [
        M("padding-in-statistics", "masking",
          "the mean and variance are taken over every position, padding included, even when a mask is given",
          [("        flat = values[mask.bool()]\n", "        flat = values.reshape(-1)\n")],
          ["whitened_values"]),
    ]),
    ("a_index_two_pass.py", [
        M("one-valid-value-accepted", "contract",
          "the check is n < 1 instead of n < 2, so a single valid value returns 0 instead of raising ValueError",
          [("    if n < 2:\n", "    if n < 1:\n")],
          ["too_few_valid"]),
        M("shift-mean-inverted", "other",
          "the mean is added back when shift_mean is True instead of when it is False",
          [("    if not shift_mean:\n", "    if shift_mean:\n")],
          ["whitened_values", "shift_mean_false"]),
    ]),
    ("b_where_sums.py", [
        M("mask-by-multiplication", "masking",
          "the variance multiplies squared deviations of the raw values by the mask, so a padded 1e20 squares to inf and inf * 0 = NaN",
          [("    centered = torch.where(m, x - mean, torch.zeros_like(x))\n    var = (centered * centered).sum() / (count - 1)\n",
            "    var = ((values.to(acc) - mean) ** 2 * m).sum() / (count - 1)\n")],
          ["huge_padding"]),
        M("result-not-cast-back", "contract",
          "the float32 working copy is returned as is, so bfloat16 values get a float32 result",
          [("    return out.to(values.dtype)\n", "    return out\n")],
          ["dtypes"]),
    ]),
    ("c_var_mean.py", [
        M("half-precision-statistics", "numerics",
          "bfloat16 values are not upcast, so the mean and variance of near-constant bfloat16 values are computed in bfloat16 and the result is off",
          [("    if flat.dtype in (torch.float16, torch.bfloat16):\n        flat = flat.float()\n", "")],
          ["bf16_near_constant"]),
        M("mask-shape-unchecked", "contract",
          "mask's shape is not checked: a [T] or [B, 1] mask fails in the boolean index with IndexError instead of a ValueError",
          [('        if mask.shape != values.shape:\n            raise ValueError("mask and values must have the same shape")\n', "")],
          ["mask_shape_error"]),
    ]),
    ("a_index_two_pass.py", [
        M("per-row-statistics", "aggregation",
          "the mean and variance are computed per row (over the last dimension) instead of over the valid values of the whole batch",
          [("    mean = picked.mean()\n    var = ((picked - mean) ** 2).sum() / (n - 1)\n",
            "    counts = valid.sum(dim=-1, keepdim=True)\n"
            "    mean = torch.where(valid, x, 0.0).sum(dim=-1, keepdim=True) / counts\n"
            "    var = torch.where(valid, (x - mean) ** 2, 0.0).sum(dim=-1, keepdim=True) / (counts - 1)\n")],
          ["whitened_values"]),
        M("inplace-edit-of-input", "contract",
          "the values are centred and scaled in place (x.sub_(...).mul_(...)); x is the input itself when no cast is needed",
          [("        whitened = (x - mean) * torch.rsqrt(var + eps)\n", "        whitened = x.sub_(mean).mul_(torch.rsqrt(var + eps))\n")],
          ["no_inplace"]),
    ]),
    ("b_where_sums.py", [
        M("no-zero-spread-detection", "contract",
          "a constant input is not detected, so a float32 mean a rounding step off gives tiny garbage instead of exactly 0",
          [('    lo = torch.where(m, x, torch.full_like(x, float("inf"))).min()\n'
            '    hi = torch.where(m, x, torch.full_like(x, float("-inf"))).max()\n'
            "    out = torch.where(lo == hi, torch.zeros_like(x), (x - mean) * torch.rsqrt(var + eps))\n",
            "    out = (x - mean) * torch.rsqrt(var + eps)\n")],
          ["constant_is_zero"]),
        M("biased-variance", "aggregation",
          "the variance is divided by n instead of n - 1",
          [("    var = (centered * centered).sum() / (count - 1)\n", "    var = (centered * centered).sum() / count\n")],
          ["whitened_values", "bessel_few_values"]),
        M("mean-added-back-includes-padding", "masking",
          "with shift_mean=False the mean added back is the mean of every position, padding included",
          [("        out = out + mean\n", "        out = out + values.to(acc).mean()\n")],
          ["shift_mean_false"]),
    ]),
    ("c_var_mean.py", [
        M("eps-outside-sqrt", "aggregation",
          "eps is added to the standard deviation instead of inside the square root",
          [("torch.sqrt(var + eps)", "(torch.sqrt(var) + eps)")],
          ["eps_inside_sqrt"]),
        M("sum-of-squares-variance", "numerics",
          "the variance is (E[x^2] - E[x]^2) * n / (n - 1), which cancels catastrophically for near-constant values",
          [("    var, mean = torch.var_mean(flat, correction=1)\n",
            "    mean = flat.mean()\n    var = ((flat * flat).mean() - mean * mean) * flat.numel() / (flat.numel() - 1)\n")],
          ["near_constant"]),
        M("one-valid-value-accepted", "contract",
          "there is no check for fewer than two valid values, so one valid value returns 0 and none returns NaN instead of raising ValueError",
          [('    if flat.numel() < 2:\n        raise ValueError(f"at least two valid values are needed, got {flat.numel()}")\n', "")],
          ["too_few_valid"]),
    ]),
]

# ----------------------------------------------------------------------------------------------
FILES["kl-penalty"] = [
    ("a_expm1.py", [
        M("k3-without-expm1", "numerics",
          "k3 is exp(r) - r - 1, which rounds to 0 in float32 for |r| < 1e-4 instead of using expm1",
          [("    return torch.expm1(r) - r\n", "    return torch.exp(r) - r - 1\n")],
          ["k3_tiny_ratio"]),
    ]),
    ("c_taylor_small.py", [
        M("coarse-taylor-branch", "numerics",
          "k3 switches to the second-order series r^2 / 2 for |r| < 0.1, which is off by about r^3 / 6 there",
          [("        small = r.abs() < 1e-3\n", "        small = r.abs() < 0.1\n"),
           ("        series = r_small * r_small * (0.5 + r_small * (1 / 6 + r_small * (1 / 24 + r_small / 120)))\n",
            "        series = 0.5 * r_small * r_small\n")],
          ["k3_small_ratio"]),
    ]),
    ("b_table.py", [
        M("kind-lower-cased", "contract",
          "kind is lower-cased before the lookup, so 'K1' is accepted and a non-string kind raises AttributeError instead of ValueError",
          [("    if not isinstance(kind, str) or kind not in _ESTIMATORS:\n", "    kind = kind.lower()\n    if kind not in _ESTIMATORS:\n")],
          ["kind_is_case_sensitive", "kind_not_string"]),
    ]),
    ("a_expm1.py", [
        M("kind-checked-with-a-set", "contract",
          "kind is looked up in a set without checking it is a string, so an unhashable kind (a list) raises TypeError instead of ValueError",
          [('    if not isinstance(kind, str) or kind not in ("k1", "k2", "k3"):\n', '    if kind not in {"k1", "k2", "k3"}:\n')],
          ["kind_not_string"]),
    ]),
    ("c_taylor_small.py", [
        M("unknown-kind-accepted", "contract",
          "any kind other than 'k1' and 'k2' falls through to k3 instead of raising ValueError",
          [('    elif kind == "k3":\n', "    else:\n"),
           ('    else:\n        raise ValueError(f"kind must be \'k1\', \'k2\' or \'k3\', not {kind!r}")\n', "")],
          ["unknown_kind"]),
    ]),
    ("b_table.py", [
        M("penalty-without-grad", "gradient-path",
          "the estimate is computed under torch.no_grad(), so no gradient reaches log_probs",
          [("    d = log_probs - ref_log_probs.detach()\n    return _ESTIMATORS[kind](d)\n",
            "    with torch.no_grad():\n        d = log_probs - ref_log_probs\n        return _ESTIMATORS[kind](d)\n")],
          ["grad_log_probs"]),
    ]),
    ("a_expm1.py", [
        M("k2-missing-half", "other",
          "k2 is (log_probs - ref_log_probs)^2 without the factor 0.5",
          [("        return 0.5 * log_ratio**2\n", "        return log_ratio**2\n")],
          ["k2_values"]),
        M("no-shape-check", "contract",
          "the shapes are not checked, so a [B, 1] or [T] ref_log_probs is broadcast instead of raising ValueError",
          [('    if ref_log_probs.shape != log_probs.shape:\n        raise ValueError(f"ref_log_probs has shape {tuple(ref_log_probs.shape)}, log_probs has {tuple(log_probs.shape)}")\n', "")],
          ["shape_error"]),
    ]),
    ("c_taylor_small.py", [
        M("k3-direction-reversed", "other",
          "k3 uses r = log_probs - ref_log_probs (the estimator of the reverse KL) instead of ref - log_probs",
          [('    elif kind == "k3":\n        small', '    elif kind == "k3":\n        r = log_probs - ref_log_probs\n        small')],
          ["k3_values"]),
        M("inplace-edit-of-input", "contract",
          "the log-ratio is computed with ref_log_probs.sub_(log_probs), overwriting the caller's ref_log_probs",
          [("    r = ref_log_probs - log_probs\n", "    r = ref_log_probs.sub_(log_probs)\n")],
          ["no_inplace"]),
    ]),
    ("b_table.py", [
        M("float64-result", "contract",
          "the log-ratio is computed in float64 and never cast back, so float32 and bfloat16 inputs get float64 results",
          [("    d = log_probs - ref_log_probs.detach()\n", "    d = log_probs.double() - ref_log_probs.detach().double()\n")],
          ["dtypes"]),
        M("reduced-to-mean", "aggregation",
          "the elementwise estimate is averaged into one number instead of returned per token",
          [("    return _ESTIMATORS[kind](d)\n", "    return _ESTIMATORS[kind](d).mean()\n")],
          ["k1_values", "k3_values"]),
    ]),
    ("a_expm1.py", [
        M("k3-from-probabilities", "numerics",
          "k3 is computed from probabilities, q / p - log(q / p) - 1 with p = exp(log_probs), which is 0/0 = NaN for log-probs near -200",
          [("    r = -log_ratio\n    return torch.expm1(r) - r\n",
            "    ratio = torch.exp(ref_log_probs) / torch.exp(log_probs)\n    return ratio - torch.log(ratio) - 1\n")],
          ["extreme_log_probs"]),
        M("k1-sign-flipped", "other",
          "k1 returns ref_log_probs - log_probs instead of log_probs - ref_log_probs",
          [('    if kind == "k1":\n        return log_ratio\n', '    if kind == "k1":\n        return -log_ratio\n')],
          ["k1_values"]),
    ]),
    ("b_table.py", [
        M("k2-missing-half", "other",
          "k2 is d^2 without the factor 0.5",
          [('    "k2": lambda d: 0.5 * d.square(),\n', '    "k2": lambda d: d.square(),\n')],
          ["k2_values"]),
        M("no-shape-check", "contract",
          "the shapes are not checked, so a [B, 1] or [T] ref_log_probs is broadcast instead of raising ValueError",
          [('    if log_probs.shape != ref_log_probs.shape:\n        raise ValueError(f"ref_log_probs must have shape {tuple(log_probs.shape)}, got {tuple(ref_log_probs.shape)}")\n', "")],
          ["shape_error"]),
        M("k3-without-expm1", "numerics",
          "k3 is exp(-d) - 1 + d, which rounds to 0 in float32 for |d| < 1e-4 instead of using expm1",
          [('    "k3": lambda d: torch.expm1(-d) + d,\n', '    "k3": lambda d: torch.exp(-d) - 1 + d,\n')],
          ["k3_tiny_ratio"]),
    ]),
    ("c_taylor_small.py", [
        M("series-branch-detached", "gradient-path",
          "the series branch is built from a detached r, so for |r| < 1e-3 the gradient of k3 is 0",
          [("        r_small = torch.where(small, r, torch.zeros_like(r))\n",
            "        r_small = torch.where(small, r, torch.zeros_like(r)).detach()\n")],
          ["grad_k3_small_ratio"]),
        M("unknown-kind-is-k1", "contract",
          "every kind that is not 'k2' or 'k3' is treated as k1 instead of raising ValueError",
          [('    if kind == "k1":\n', '    if kind not in ("k2", "k3"):\n')],
          ["unknown_kind"]),
        M("result-flattened", "other",
          "the log-ratio is flattened, so the result is 1-D instead of shaped like the inputs",
          [("    r = ref_log_probs - log_probs\n", "    r = (ref_log_probs - log_probs).flatten()\n")],
          ["any_shape"]),
    ]),
]

# ----------------------------------------------------------------------------------------------
FILES["grpo-advantages"] = [
    ("a_view_std.py", [
        M("no-zero-spread-detection", "contract",
          "a group of equal scores is not detected, so a float32 group mean a rounding step off gives garbage instead of exactly 0",
          [("    flat_spread = groups.amax(dim=1, keepdim=True) == groups.amin(dim=1, keepdim=True)\n"
            "    adv = torch.where(flat_spread, torch.zeros_like(centered), centered)\n\n"
            "    return adv.reshape(-1).to(out_dtype)\n",
            "\n    return centered.reshape(-1).to(out_dtype)\n")],
          ["constant_group_is_zero"]),
    ]),
    ("b_group_loop.py", [
        M("batch-mean-baseline", "aggregation",
          "each score has the mean of all N scores subtracted instead of its own group's mean",
          [("        adv = group - group.mean()\n", "        adv = group - x.mean()\n")],
          ["advantage_values"]),
    ]),
    ("c_manual_bessel.py", [
        M("eps-inside-sqrt", "aggregation",
          "eps is added to the variance inside the square root instead of to the standard deviation",
          [("        std = (dev.pow(2).sum(dim=1, keepdim=True) / (G - 1)).sqrt()\n        dev = dev / (std + eps)\n",
            "        std = (dev.pow(2).sum(dim=1, keepdim=True) / (G - 1) + eps).sqrt()\n        dev = dev / std\n")],
          ["eps_outside_sqrt"]),
    ]),
    ("a_view_std.py", [
        M("zero-group-size-division", "contract",
          "N % group_size is checked before group_size < 2, so group_size=0 raises ZeroDivisionError instead of ValueError",
          [('    if group_size < 2:\n        raise ValueError(f"group_size must be at least 2, got {group_size}")\n', ""),
           ('        raise ValueError(f"{n} scores do not split into groups of {group_size}")\n',
            '        raise ValueError(f"{n} scores do not split into groups of {group_size}")\n'
            '    if group_size < 2:\n        raise ValueError(f"group_size must be at least 2, got {group_size}")\n')],
          ["error_small_group"]),
    ]),
    ("b_group_loop.py", [
        M("scores-flattened", "contract",
          "scores of any shape are flattened instead of requiring 1-D, so 2-D scores are accepted",
          [('    if not torch.is_tensor(scores) or scores.ndim != 1:\n        raise ValueError("scores must be a 1-D tensor")\n',
            '    if not torch.is_tensor(scores):\n        raise ValueError("scores must be a tensor")\n    scores = scores.flatten()\n')],
          ["error_not_1d"]),
    ]),
    ("c_manual_bessel.py", [
        M("integer-scores-kept-integer", "contract",
          "the result is cast to the scores' own dtype, so integer scores come back as truncated integers instead of float32",
          [("    out_dtype = scores.dtype if scores.is_floating_point() else torch.float32\n", "    out_dtype = scores.dtype\n")],
          ["dtypes"]),
    ]),
    ("a_view_std.py", [
        M("biased-std", "aggregation",
          "the group std is the biased one (unbiased=False) instead of Bessel-corrected",
          [("groups.std(dim=1, keepdim=True)", "groups.std(dim=1, keepdim=True, unbiased=False)")],
          ["bessel_small_groups", "advantage_values"]),
        M("negative-eps-accepted", "contract",
          "a negative eps is not rejected",
          [('    if eps < 0:\n        raise ValueError(f"eps must be non-negative, got {eps}")\n', "")],
          ["error_negative_eps"]),
    ]),
    ("c_manual_bessel.py", [
        M("strided-groups", "other",
          "the scores are reshaped to [G, N // G] and transposed, so each group is every (N // G)-th score instead of a consecutive run",
          [("    x = scores.to(work).reshape(-1, G)\n", "    x = scores.to(work).reshape(G, -1).T\n")],
          ["consecutive_groups"]),
        M("fractional-group-size-truncated", "contract",
          "a float group_size is truncated with int(), so 2.5 is accepted as 2 instead of raising ValueError",
          [("    if isinstance(group_size, float) and group_size.is_integer():\n", "    if isinstance(group_size, float):\n")],
          ["error_bad_group_size"]),
    ]),
    ("b_group_loop.py", [
        M("inplace-edit-of-input", "contract",
          "each group is centred with sub_ on a view of the scores (float() returns the same tensor for float32), editing the caller's tensor",
          [("        adv = group - group.mean()\n", "        adv = group.sub_(group.mean())\n")],
          ["no_inplace"]),
        M("half-precision-statistics", "numerics",
          "bfloat16 scores are not upcast, so the group statistics of near-tied bfloat16 scores are computed in bfloat16 and the result is off",
          [("    x = scores.double() if dtype == torch.float64 else scores.float()\n", "    x = scores.to(dtype)\n")],
          ["bf16_near_tied"]),
    ]),
    ("a_view_std.py", [
        M("float64-scores-to-float32", "contract",
          "the result is always float32, so float64 scores lose their dtype (and precision)",
          [("    out_dtype = scores.dtype if scores.is_floating_point() else torch.float32\n", "    out_dtype = torch.float32\n")],
          ["dtypes"]),
        M("sum-of-squares-std", "numerics",
          "the group std is sqrt((E[x^2] - E[x]^2) * G / (G - 1)), which cancels catastrophically for near-tied scores",
          [("        centered = centered / (groups.std(dim=1, keepdim=True) + eps)\n",
            "        var = ((groups**2).mean(dim=1, keepdim=True) - groups.mean(dim=1, keepdim=True) ** 2) * group_size / (group_size - 1)\n"
            "        centered = centered / (var.sqrt() + eps)\n")],
          ["near_tied_float32"]),
    ]),
    ("b_group_loop.py", [
        M("not-multiple-accepted", "contract",
          "N is never checked to be a multiple of group_size: the last, shorter group is whitened on its own",
          [('    if scores.numel() % group_size:\n        raise ValueError(f"len(scores) = {scores.numel()} is not a multiple of group_size = {group_size}")\n', "")],
          ["error_not_multiple"]),
        M("biased-std", "aggregation",
          "the group std is the biased one (unbiased=False)",
          [("group.std(unbiased=True)", "group.std(unbiased=False)")],
          ["bessel_small_groups"]),
        M("no-zero-spread-detection", "contract",
          "a group of equal scores is not detected, so a float32 group mean a rounding step off gives garbage instead of exactly 0",
          [("        if bool((group == group[0]).all()):\n            chunks.append(torch.zeros_like(group))\n            continue\n", "")],
          ["constant_group_is_zero"]),
    ]),
    ("c_manual_bessel.py", [
        M("integral-float-group-size-refused", "contract",
          "an integral float group_size such as 4.0 is refused with ValueError instead of being taken as 4",
          [("    if isinstance(group_size, float) and group_size.is_integer():\n        group_size = int(group_size)\n", "")],
          ["integral_float_group_size"]),
        M("batch-std", "aggregation",
          "the advantages are divided by the std of all N scores instead of each group's std",
          [("        std = (dev.pow(2).sum(dim=1, keepdim=True) / (G - 1)).sqrt()\n", "        std = x.std()\n")],
          ["advantage_values"]),
        M("zero-spread-from-centred-values", "contract",
          "a group counts as constant only when its centred values are all exactly 0, which misses a constant group whose float32 mean is a rounding step off",
          [("    constant = (x.max(dim=1, keepdim=True).values - x.min(dim=1, keepdim=True).values) == 0\n",
            "    constant = (x - mean).abs().amax(dim=1, keepdim=True) == 0\n")],
          ["constant_group_is_zero"]),
    ]),
]

# ----------------------------------------------------------------------------------------------
FILES["dpo-loss"] = [
    ("a_logsigmoid.py", [
        M("rewards-not-detached", "contract",
          "chosen_rewards and rejected_rewards are returned without detach, so they require grad",
          [("    return loss, chosen_rewards.detach(), rejected_rewards.detach()\n", "    return loss, chosen_rewards, rejected_rewards\n")],
          ["rewards_detached"]),
    ]),
    ("c_logaddexp.py", [
        M("loss-from-detached-rewards", "gradient-path",
          "the loss is computed from the detached rewards, so no gradient reaches the policy inputs",
          [("    margin = chosen_rewards - rejected_rewards\n", "    margin = chosen_rewards.detach() - rejected_rewards.detach()\n")],
          ["grad_policy_inputs"]),
    ]),
    ("b_logratios_softplus.py", [
        M("log-of-sigmoid", "numerics",
          "the loss is -log(sigmoid(beta * logits)), which underflows to log(0) = inf for a reward gap of -200 in float32",
          [("    loss = F.softplus(-beta * logits).mean()\n", "    loss = -torch.log(torch.sigmoid(beta * logits)).mean()\n")],
          ["large_gaps"]),
    ]),
    ("a_logsigmoid.py", [
        M("detach-rejected", "gradient-path",
          "the rejected reward is detached inside the loss, so no gradient reaches policy_rejected_logps",
          [("    loss = -F.logsigmoid(chosen_rewards - rejected_rewards).mean()\n",
            "    loss = -F.logsigmoid(chosen_rewards - rejected_rewards.detach()).mean()\n")],
          ["grad_policy_inputs"]),
    ]),
    ("c_logaddexp.py", [
        M("sum-instead-of-mean", "aggregation",
          "the per-pair losses are summed instead of averaged",
          [("    return losses.mean(), ", "    return losses.sum(), ")],
          ["loss_values"]),
    ]),
    ("b_logratios_softplus.py", [
        M("rewards-without-beta", "other",
          "the returned rewards are policy - reference without the factor beta",
          [("        chosen_rewards = beta * (policy_chosen_logps - ref_chosen_logps)\n        rejected_rewards = beta * (policy_rejected_logps - ref_rejected_logps)\n",
            "        chosen_rewards = policy_chosen_logps - ref_chosen_logps\n        rejected_rewards = policy_rejected_logps - ref_rejected_logps\n")],
          ["reward_values"]),
    ]),
    ("b_logratios_softplus.py", [
        M("inplace-edit-of-input", "contract",
          "the rewards are built in place on policy_*_logps.detach(), which shares storage with the caller's tensors",
          [("    with torch.no_grad():\n"
            "        chosen_rewards = beta * (policy_chosen_logps - ref_chosen_logps)\n"
            "        rejected_rewards = beta * (policy_rejected_logps - ref_rejected_logps)\n",
            "    chosen_rewards = policy_chosen_logps.detach()\n"
            "    chosen_rewards -= ref_chosen_logps\n"
            "    chosen_rewards *= beta\n"
            "    rejected_rewards = policy_rejected_logps.detach()\n"
            "    rejected_rewards -= ref_rejected_logps\n"
            "    rejected_rewards *= beta\n")],
          ["no_inplace"]),
        M("beta-outside-logsigmoid", "other",
          "beta multiplies the loss instead of the logits: beta * softplus(-logits)",
          [("    loss = F.softplus(-beta * logits).mean()\n", "    loss = beta * F.softplus(-logits).mean()\n")],
          ["loss_values"]),
    ]),
    ("c_logaddexp.py", [
        M("ref-rejected-shape-unchecked", "contract",
          "ref_rejected_logps' shape is not checked: a [B, 1] tensor is broadcast instead of raising ValueError",
          [('    if ref_rejected_logps.shape != shape:\n        raise ValueError("ref_rejected_logps must have the shape of policy_chosen_logps")\n', "")],
          ["shape_error"]),
        M("log1p-exp-overflow", "numerics",
          "the loss is log1p(exp(-margin)), whose exp overflows to inf for a reward gap of -200 in float32",
          [("    losses = torch.logaddexp(torch.zeros_like(margin), -margin)\n", "    losses = torch.log1p(torch.exp(-margin))\n")],
          ["large_gaps"]),
    ]),
    ("a_logsigmoid.py", [
        M("loss-cast-to-float32", "contract",
          "the loss is cast with .float(), so float64 (and bfloat16) inputs get a float32 loss",
          [(".mean()\n\n    return loss", ".mean().float()\n\n    return loss")],
          ["dtypes"]),
        M("reward-gap-reversed", "other",
          "the loss uses rejected - chosen instead of chosen - rejected",
          [("F.logsigmoid(chosen_rewards - rejected_rewards)", "F.logsigmoid(rejected_rewards - chosen_rewards)")],
          ["loss_values"]),
    ]),
    ("b_logratios_softplus.py", [
        M("reference-ratio-added", "other",
          "the reference log-ratio is added to the policy log-ratio instead of subtracted",
          [("    logits = pi_logratios - ref_logratios\n", "    logits = pi_logratios + ref_logratios\n")],
          ["loss_values"]),
        M("no-shape-check", "contract",
          "no shape validation: inputs of other (broadcastable) shapes are accepted instead of raising ValueError",
          [("    expected = policy_chosen_logps.shape\n"
            "    for name, t in [\n"
            '        ("policy_rejected_logps", policy_rejected_logps),\n'
            '        ("ref_chosen_logps", ref_chosen_logps),\n'
            '        ("ref_rejected_logps", ref_rejected_logps),\n'
            "    ]:\n"
            "        if t.shape != expected:\n"
            '            raise ValueError(f"{name}: expected shape {tuple(expected)}, got {tuple(t.shape)}")\n', "")],
          ["shape_error"]),
    ]),
    ("c_logaddexp.py", [
        M("rewards-not-detached", "contract",
          "chosen_rewards and rejected_rewards are returned without detach, so they require grad",
          [("chosen_rewards.detach(), rejected_rewards.detach()\n", "chosen_rewards, rejected_rewards\n")],
          ["rewards_detached"]),
        M("detach-chosen", "gradient-path",
          "the chosen reward is detached inside the loss, so no gradient reaches policy_chosen_logps",
          [("    margin = chosen_rewards - rejected_rewards\n", "    margin = chosen_rewards.detach() - rejected_rewards\n")],
          ["grad_policy_inputs"]),
        M("sum-instead-of-mean", "aggregation",
          "the per-pair losses are summed instead of averaged",
          [("    return losses.mean(), ", "    return losses.sum(), ")],
          ["loss_values"]),
    ]),
    ("a_logsigmoid.py", [
        M("log-of-sigmoid", "numerics",
          "the loss is -log(sigmoid(gap)), which underflows to log(0) = inf for a reward gap of -200 in float32",
          [("-F.logsigmoid(chosen_rewards - rejected_rewards)", "-torch.log(torch.sigmoid(chosen_rewards - rejected_rewards))")],
          ["large_gaps"]),
        M("ref-chosen-shape-unchecked", "contract",
          "ref_chosen_logps is left out of the shape check: a [1] or [B, 1] tensor is broadcast instead of raising ValueError",
          [('        ("ref_chosen_logps", ref_chosen_logps),\n', "")],
          ["shape_error"]),
        M("sum-instead-of-mean", "aggregation",
          "the per-pair losses are summed instead of averaged",
          [(".mean()\n\n    return loss", ".sum()\n\n    return loss")],
          ["loss_values"]),
    ]),
]

# ----------------------------------------------------------------------------------------------
_MEM_B_TRAINED = (
    "        weights = _ceil_div(p * w, num_gpus) if zero_stage >= 3 else p * w\n"
    "        grads = _ceil_div(p * g, num_gpus) if zero_stage >= 2 else p * g\n"
    "        optimizer = _ceil_div(p * o, num_gpus) if zero_stage >= 1 else p * o\n"
    "        out[name] = weights + grads + optimizer\n"
)
_MEM_C_TRAINED = (
    "        return (\n"
    "            per_gpu(params * weight_bytes, shard_weights)\n"
    "            + per_gpu(params * grad_bytes, shard_grads)\n"
    "            + per_gpu(params * optimizer_bytes, shard_optimizer)\n"
    "        )\n"
)

FILES["ppo-memory"] = [
    ("a_helpers.py", [
        M("bool-count-accepted", "contract",
          "bools pass the count check (isinstance(True, int) is True), so True is taken as a count of 1",
          [("    if isinstance(value, bool) or not isinstance(value, (int, float)):\n", "    if not isinstance(value, (int, float)):\n")],
          ["error_bool_count"]),
    ]),
    ("b_divmod.py", [
        M("negative-float-count-accepted", "contract",
          "only int counts are checked for sign, so a negative integral float such as -7e9 is accepted",
          [("    if x < 0:\n", "    if isinstance(x, int) and x < 0:\n")],
          ["error_negative_count"]),
    ]),
    ("c_flags.py", [
        M("float-division-ceil", "numerics",
          "sharded bytes are math.ceil(nbytes / num_gpus), a float division that is off past 2**53 bytes",
          [('"""How much memory PPO needs per GPU (no activations), with ZeRO sharding."""\n',
            '"""How much memory PPO needs per GPU (no activations), with ZeRO sharding."""\n\nimport math\n'),
           ("        return -(-nbytes // num_gpus) if sharded else nbytes\n",
            "        return math.ceil(nbytes / num_gpus) if sharded else nbytes\n")],
          ["rounding_up"]),
    ]),
    ("a_helpers.py", [
        M("floor-instead-of-ceil", "other",
          "sharded bytes are rounded down (nbytes // num_gpus) instead of up",
          [("    return -(-nbytes // num_gpus)\n", "    return nbytes // num_gpus\n")],
          ["rounding_up"]),
    ]),
    ("b_divmod.py", [
        M("frozen-models-sharded", "other",
          "at ZeRO stage 3 the frozen reward and reference models' weights are sharded too",
          [("        out[name] = counts[name] * w\n",
            "        out[name] = _ceil_div(counts[name] * w, num_gpus) if zero_stage >= 3 else counts[name] * w\n")],
          ["chapter_zero3"]),
    ]),
    ("c_flags.py", [
        M("stage-1-shards-grads", "other",
          "gradients are sharded from ZeRO stage 1 on instead of from stage 2",
          [("    shard_grads = zero_stage >= 2\n", "    shard_grads = zero_stage >= 1\n")],
          ["zero_stage_1"]),
    ]),
    ("a_helpers.py", [
        M("float-counts-kept", "contract",
          "integral float counts are checked but not converted, so 7e9 gives float byte counts instead of ints",
          [("            raise ValueError(f\"{name} must be a whole number, got {value!r}\")\n        value = int(value)\n",
            "            raise ValueError(f\"{name} must be a whole number, got {value!r}\")\n")],
          ["entries_are_ints"]),
        M("total-without-frozen-models", "other",
          "total_per_gpu adds only the actor and the critic, leaving out the frozen models",
          [('    ledger["total_per_gpu"] = sum(ledger.values())\n', '    ledger["total_per_gpu"] = ledger["actor"] + ledger["critic"]\n')],
          ["chapter_example"]),
    ]),
    ("b_divmod.py", [
        M("rounding-of-the-sum", "aggregation",
          "the sharded quantities of a model are added first and rounded up once, instead of each quantity being rounded up",
          [(_MEM_B_TRAINED,
            "        sharded = (p * o if zero_stage >= 1 else 0) + (p * g if zero_stage >= 2 else 0) + (p * w if zero_stage >= 3 else 0)\n"
            "        kept = p * (w + g + o) - sharded\n"
            "        out[name] = kept + _ceil_div(sharded, num_gpus)\n")],
          ["rounding_up"]),
        M("num-gpus-unchecked", "contract",
          "num_gpus < 1 is not rejected (0 or -1 GPUs give a ledger, or a ZeroDivisionError once sharding divides)",
          [("    if type(num_gpus) is bool or not isinstance(num_gpus, int) or num_gpus < 1:\n",
            "    if type(num_gpus) is bool or not isinstance(num_gpus, int):\n")],
          ["error_num_gpus"]),
    ]),
    ("c_flags.py", [
        M("byte-sizes-unchecked", "contract",
          "weight_bytes, grad_bytes and optimizer_bytes are used unchecked: negative, fractional and bool sizes are accepted",
          [('    weight_bytes = _as_int("weight_bytes", weight_bytes)\n'
            '    grad_bytes = _as_int("grad_bytes", grad_bytes)\n'
            '    optimizer_bytes = _as_int("optimizer_bytes", optimizer_bytes)\n', "")],
          ["error_byte_sizes"]),
        M("optimizer-sharded-without-zero", "other",
          "the optimizer state is sharded whenever there is more than one GPU, even at ZeRO stage 0",
          [("    shard_optimizer = zero_stage >= 1\n", "    shard_optimizer = num_gpus > 1\n")],
          ["stage0_multi_gpu"]),
    ]),
    ("a_helpers.py", [
        M("zero-stage-unchecked", "contract",
          "zero_stage is not validated, so 4 is taken as stage 3 and -1 as stage 0 instead of raising ValueError",
          [('    if zero_stage not in (0, 1, 2, 3):\n        raise ValueError(f"zero_stage must be 0, 1, 2 or 3, got {zero_stage!r}")\n', "")],
          ["error_zero_stage"]),
        M("stage-2-shards-weights", "other",
          "weights are sharded from ZeRO stage 2 on instead of only at stage 3",
          [("        if zero_stage >= 3:\n            weights = _shard(weights, n)\n", "        if zero_stage >= 2:\n            weights = _shard(weights, n)\n")],
          ["zero_stage_2"]),
    ]),
    ("b_divmod.py", [
        M("float-division-ceil", "numerics",
          "the rounded-up division is math.ceil(a / b), a float division that is off past 2**53 bytes",
          [("    q, r = divmod(a, b)\n    return q + (1 if r else 0)\n", "    return math.ceil(a / b)\n")],
          ["rounding_up"]),
        M("fractional-count-truncated", "contract",
          "fractional counts are not rejected: int() truncates 7.5 to 7",
          [('    if isinstance(x, float) and not (math.isfinite(x) and x == int(x)):\n        raise ValueError(f"{name}: expected a whole number, got {x!r}")\n', "")],
          ["error_fractional_count"]),
        M("critic-treated-as-frozen", "other",
          "the critic is counted as a frozen model (weights only) instead of a trained one",
          [('    for name in ("actor", "critic"):\n', '    for name in ("actor",):\n'),
           ('    for name in ("reward", "reference"):\n', '    for name in ("critic", "reward", "reference"):\n')],
          ["chapter_example"]),
    ]),
    ("c_flags.py", [
        M("bool-count-accepted", "contract",
          "the bool check is missing, so True is accepted as a count of 1",
          [('    if isinstance(value, bool):\n        raise ValueError(f"{name} cannot be a bool")\n', "")],
          ["error_bool_count"]),
        M("rounding-of-the-sum", "aggregation",
          "a model's sharded quantities are added first and rounded up once instead of per quantity",
          [(_MEM_C_TRAINED,
            "        sharded = (\n"
            "            (params * weight_bytes if shard_weights else 0)\n"
            "            + (params * grad_bytes if shard_grads else 0)\n"
            "            + (params * optimizer_bytes if shard_optimizer else 0)\n"
            "        )\n"
            "        kept = params * (weight_bytes + grad_bytes + optimizer_bytes) - sharded\n"
            "        return kept + per_gpu(sharded, True)\n")],
          ["rounding_up"]),
        M("stage-3-keeps-grads", "other",
          "gradients are sharded only at exactly stage 2, so stage 3 keeps full gradients",
          [("    shard_grads = zero_stage >= 2\n", "    shard_grads = zero_stage == 2\n")],
          ["chapter_zero3"]),
    ]),
]
