"""Contract probes for the blind corpus: one named check per behaviour the contract fixes.

Written from /work/shared/EXERCISES.md and the starters' docstrings only. Each check takes the
learner's function and returns nothing when the behaviour matches the contract, or raises
`Fail` with a one-line reason. Expected values come from float64 oracles written here, apart
from the learner-style solutions under correct/.

prove.py runs every check on every correct file (all must pass), and the checks named for a
mistake on the correct file with only that mistake applied (each must fail).
"""

# Probe functions of different exercises share names (values, shape_error, ...): each is
# registered under its exercise by @check before the next one rebinds the name.
# ruff: noqa: F811

from __future__ import annotations

import math
import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

F64 = torch.float64
F32 = torch.float32
BF16 = torch.bfloat16

# (relative, absolute) tolerance per dtype, as the starters state them.
TOL = {F64: (1e-10, 1e-12), F32: (1e-4, 1e-5), BF16: (2e-2, 2e-2), torch.float16: (2e-2, 2e-2)}
UNIT = {F64: 2.2e-16, F32: 1.2e-7, BF16: 1.2e-7, torch.float16: 1.2e-7}
MIB = 2**20


class Fail(Exception):
    """The function does not do what the contract says on this probe."""


# --------------------------------------------------------------------------------------------
# helpers


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def randn(shape, seed, scale=1.0, dtype=F64):
    return (torch.randn(shape, generator=gen(seed), dtype=F64) * scale).to(dtype)


def uniform(shape, seed, lo, hi, dtype=F64):
    return (torch.rand(shape, generator=gen(seed), dtype=F64) * (hi - lo) + lo).to(dtype)


def right_padded(lengths, T, dtype=F64):
    """A [B, T] 0/1 mask with the given number of leading ones per row."""
    m = torch.zeros(len(lengths), T, dtype=dtype)
    for b, n in enumerate(lengths):
        m[b, :n] = 1
    return m


def call(fn, *args, **kwargs):
    """Call the learner's function; any exception is a failed probe."""
    try:
        return fn(*args, **kwargs)
    except Fail:
        raise
    except Exception as exc:  # a crash is a result here
        raise Fail(f"raised {type(exc).__name__}: {str(exc)[:120]}") from None


def expect_raises(exc_type, fn, *args, what="", **kwargs):
    try:
        fn(*args, **kwargs)
    except exc_type:
        return
    except Exception as exc:
        raise Fail(f"{what}: raised {type(exc).__name__} instead of {exc_type.__name__}") from None
    raise Fail(f"{what}: returned instead of raising {exc_type.__name__}")


def as_tensor(x, what):
    if not isinstance(x, torch.Tensor):
        raise Fail(f"{what}: expected a tensor, got {type(x).__name__}")
    return x


def expect_close(got, want, dtype, what, extra_atol=None):
    """got (learner, in dtype) against want (float64) within the dtype's tolerance."""
    got = as_tensor(got, what)
    want = torch.as_tensor(want, dtype=F64)
    if tuple(got.shape) != tuple(want.shape):
        raise Fail(f"{what}: shape {tuple(got.shape)}, expected {tuple(want.shape)}")
    g = got.detach().to(F64)
    if torch.isnan(g).any() and not torch.isnan(want).any():
        raise Fail(f"{what}: NaN in the result")
    if torch.isinf(g).any() and not torch.isinf(want).any():
        raise Fail(f"{what}: inf in the result")
    rtol, atol = TOL[dtype]
    bound = atol + rtol * want.abs()
    if extra_atol is not None:
        bound = bound + extra_atol
    err = (g - want).abs()
    bad = ~(err <= bound)
    if bad.any():
        i = int(bad.reshape(-1).nonzero()[0])
        raise Fail(f"{what}: got {g.reshape(-1)[i].item():.10g}, expected {want.reshape(-1)[i].item():.10g}")


def expect_equal(got, want, what):
    got = as_tensor(got, what)
    want = torch.as_tensor(want, dtype=got.dtype)
    if tuple(got.shape) != tuple(want.shape) or not torch.equal(got.detach(), want):
        raise Fail(f"{what}: not exactly {want.reshape(-1)[:6].tolist()} (got {got.detach().reshape(-1)[:6].tolist()})")


def expect_scalar(x, dtype, what):
    x = as_tensor(x, what)
    if x.dim() != 0:
        raise Fail(f"{what}: expected a 0-dim tensor, got shape {tuple(x.shape)}")
    if x.dtype != dtype:
        raise Fail(f"{what}: dtype {x.dtype}, expected {dtype}")


def leaf(t, grad=True):
    return t.detach().clone().requires_grad_(grad)


def grad_of(out, inputs, what):
    out = as_tensor(out, what)
    if not out.requires_grad:
        raise Fail(f"{what}: the result carries no gradient")
    try:
        out.backward()
    except Exception as exc:
        raise Fail(f"{what}: backward raised {type(exc).__name__}: {str(exc)[:100]}") from None
    grads = []
    for t in inputs:
        if t.grad is None:
            raise Fail(f"{what}: no gradient reached an input that needs one")
        grads.append(t.grad)
    return grads


def unchanged(fn, tensors, what, **kwargs):
    """Call fn(*args, **kwargs) and fail if any tensor argument was modified."""
    before = [t.detach().clone() if isinstance(t, torch.Tensor) else None for t in tensors]
    call(fn, *tensors, **kwargs)
    for i, (t, b) in enumerate(zip(tensors, before)):
        if b is not None and (t.shape != b.shape or not torch.equal(t.detach(), b)):
            raise Fail(f"{what}: argument {i} was modified in place")


class LiveBytes(TorchDispatchMode):
    """Counts the bytes of tensor storages alive while active, and their peak.

    Every op's output storage is counted once, and uncounted when its storage is freed (a weak
    reference's callback), so tensors saved for backward count as long as they live.
    """

    def __init__(self):
        super().__init__()
        self.live = {}
        self.current = 0
        self.peak = 0

    def _gone(self, key):
        self.current -= self.live.pop(key, (0, None))[0]

    def _track(self, t):
        s = t.untyped_storage()
        key = id(s)
        if key not in self.live and t.device.type == "cpu":
            n = s.nbytes()
            self.live[key] = (n, weakref.ref(s, lambda _ref, k=key: self._gone(k)))
            self.current += n
            self.peak = max(self.peak, self.current)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if type(t) is torch.Tensor:
                self._track(t)
        return out


_REF_PEAKS: dict[str, int] = {}


def ref_peak(name, thunk) -> int:
    """The lean reference's peak for a memory probe, measured once per process."""
    if name not in _REF_PEAKS:
        _REF_PEAKS[name] = peak_bytes(thunk)
    return _REF_PEAKS[name]


def peak_bytes(thunk) -> int:
    with LiveBytes() as m:
        thunk()
    return m.peak


def within_budget(peak, ref_peak, what):
    budget = max(1.5 * ref_peak, ref_peak + 16 * MIB)
    if peak > budget:
        raise Fail(f"{what}: peak {peak / MIB:.1f} MiB over the budget {budget / MIB:.1f} MiB")


def on_meta(fn, args, what, **kwargs):
    """Run on the meta device: results must come back on the inputs' device."""
    out = call(fn, *args, **kwargs)
    for t in tree_flatten(out)[0]:
        if isinstance(t, torch.Tensor) and t.device.type != "meta":
            raise Fail(f"{what}: a result is on {t.device}, not on the inputs' device")


CHECKS: dict[str, dict[str, object]] = {}
# Checks every correct file must pass; the others are targeted: they need a property only some
# styles have (running on the meta device), so only the correct file a mistake starts from
# must pass them.
GENERAL: dict[str, set[str]] = {}


def check(slug, general=True):
    def register(f):
        CHECKS.setdefault(slug, {})[f.__name__] = f
        if general:
            GENERAL.setdefault(slug, set()).add(f.__name__)
        return f

    return register


# --------------------------------------------------------------------------------------------
# actor-loss


def o_actor(new, old, adv, eps=0.2):
    new, old, adv = (t.detach().to(F64) for t in (new, old, adv))
    r = torch.exp(new - old)
    return -torch.minimum(r * adv, r.clamp(1 - eps, 1 + eps) * adv).mean()


def o_actor_grad(new, old, adv, eps=0.2):
    new, old, adv = (t.detach().to(F64) for t in (new, old, adv))
    r = torch.exp(new - old)
    unclipped_is_min = r * adv <= r.clamp(1 - eps, 1 + eps) * adv
    return torch.where(unclipped_is_min, -adv * r, torch.zeros_like(r)) / r.numel()


def actor_inputs(shape, seed, spread=0.3, dtype=F64):
    old = uniform(shape, seed, -3.0, -0.1)
    new = old + randn(shape, seed + 1, spread)
    adv = randn(shape, seed + 2)
    return new.to(dtype), old.to(dtype), adv.to(dtype)


@check("actor-loss")
def values(fn):
    for dtype, seed in ((F64, 1), (F32, 2)):
        new, old, adv = actor_inputs((4, 9), seed, dtype=dtype)
        expect_close(call(fn, new, old, adv), o_actor(new, old, adv), dtype, f"loss {dtype}")


@check("actor-loss")
def values_clip_range(fn):
    new, old, adv = actor_inputs((5, 8), 3, spread=0.4)
    for eps in (0.1, 0.35):
        expect_close(call(fn, new, old, adv, clip_range=eps), o_actor(new, old, adv, eps), F64, f"clip_range={eps}")


@check("actor-loss")
def clipped_side(fn):
    # ratio beyond the range in the advantage's direction: the clipped term is the minimum
    cases = [(math.log(1.5), 1.0), (math.log(0.5), -1.0), (math.log(3.0), 2.0), (math.log(0.3), -0.5)]
    for lr, a in cases:
        new, old, adv = torch.tensor([lr], dtype=F64), torch.zeros(1, dtype=F64), torch.tensor([a], dtype=F64)
        expect_close(call(fn, new, old, adv), o_actor(new, old, adv), F64, f"ratio {math.exp(lr):.2f}, A={a}")


@check("actor-loss")
def unclipped_side(fn):
    cases = [(math.log(1.5), -1.0), (math.log(0.5), 1.0), (math.log(1.1), 1.0), (math.log(0.9), -1.0)]
    for lr, a in cases:
        new, old, adv = torch.tensor([lr], dtype=F64), torch.zeros(1, dtype=F64), torch.tensor([a], dtype=F64)
        expect_close(call(fn, new, old, adv), o_actor(new, old, adv), F64, f"ratio {math.exp(lr):.2f}, A={a}")


@check("actor-loss")
def grad(fn):
    new, old, adv = actor_inputs((4, 9), 4, spread=0.3)
    x = leaf(new)
    (g,) = grad_of(call(fn, x, old, adv), [x], "d loss / d log_probs_new")
    expect_close(g, o_actor_grad(new, old, adv), F64, "d loss / d log_probs_new")


@check("actor-loss")
def grad_zero_where_clipped(fn):
    lr = torch.tensor([math.log(1.6), math.log(0.4), math.log(2.0), math.log(0.6)], dtype=F64)
    adv = torch.tensor([1.0, -1.0, 0.5, -2.0], dtype=F64)
    x = leaf(lr)
    (g,) = grad_of(call(fn, x, torch.zeros(4, dtype=F64), adv), [x], "clipped elements")
    expect_equal(g, torch.zeros(4, dtype=F64), "gradient where the clipped term is the minimum")


@check("actor-loss")
def shape_error(fn):
    new, old, adv = actor_inputs((3, 5), 5)
    expect_raises(ValueError, fn, new, old, adv[:, :1], what="advantages [B, 1]")
    expect_raises(ValueError, fn, new, old, adv[0], what="advantages [T]")
    expect_raises(ValueError, fn, new, old[:, :1], adv, what="log_probs_old [B, 1]")


@check("actor-loss")
def dtype_and_dim(fn):
    for dtype in (F32, F64, BF16):
        new, old, adv = actor_inputs((3, 6), 6, dtype=dtype)
        out = call(fn, new, old, adv)
        expect_scalar(out, dtype, f"{dtype} inputs")
        expect_close(out, o_actor(new, old, adv), dtype, f"{dtype} value")


@check("actor-loss")
def no_inplace(fn):
    new, old, adv = actor_inputs((3, 6), 7)
    unchanged(fn, [new, old, adv], "actor loss")


@check("actor-loss")
def any_shape(fn):
    for shape in ((7,), (2, 3, 4)):
        new, old, adv = actor_inputs(shape, 8)
        expect_close(call(fn, new, old, adv), o_actor(new, old, adv), F64, f"shape {shape}")


@check("actor-loss")
def low_log_probs(fn):
    # legal log-probs far below -100: exp of each alone underflows float32, the ratio does not
    old = uniform((4, 8), 9, -160.0, -110.0, F32)
    new = old + randn((4, 8), 10, 0.3, F32)
    adv = randn((4, 8), 11, 1.0, F32)
    expect_close(call(fn, new, old, adv), o_actor(new, old, adv), F32, "log-probs near -130")


@check("actor-loss")
def large_log_ratio(fn):
    old = torch.zeros(4, dtype=F64)
    new = torch.tensor([25.0, -30.0, 22.0, 0.1], dtype=F64)
    adv = torch.tensor([-1.0, 1.0, -0.5, 1.0], dtype=F64)
    expect_close(call(fn, new, old, adv), o_actor(new, old, adv), F64, "log-ratios of +-25")


def _actor_memory_run(fn, inputs):
    new, old, adv = inputs
    x = leaf(new)
    out = fn(x, old, adv)
    out.backward()


def _actor_lean(new, old, adv, clip_range=0.2):
    ratio = torch.exp(new - old)
    return -torch.min(ratio * adv, torch.clamp(ratio, 1 - clip_range, 1 + clip_range) * adv).mean()


@check("actor-loss")
def memory(fn):
    inputs = actor_inputs((16, 32768), 12, dtype=F32)
    ref = ref_peak("actor-loss", lambda: _actor_memory_run(_actor_lean, inputs))
    try:
        peak = peak_bytes(lambda: _actor_memory_run(fn, inputs))
    except Exception as exc:
        raise Fail(f"raised {type(exc).__name__}") from None
    within_budget(peak, ref, "16 x 32768 forward + backward")


# --------------------------------------------------------------------------------------------
# masked-actor-loss


def o_masked(new, old, adv, mask, eps=0.2, mode="seq-mean-token-mean"):
    new, old, adv = (t.detach().to(F64) for t in (new, old, adv))
    valid = torch.ones_like(new, dtype=torch.bool) if mask is None else mask.bool()
    r = torch.exp(torch.where(valid, new - old, torch.zeros_like(new)))
    per = -torch.minimum(r * adv, r.clamp(1 - eps, 1 + eps) * adv)
    per = torch.where(valid, per, torch.zeros_like(per))
    if mode == "token-mean":
        return per.sum() / max(int(valid.sum()), 1)
    rows = [per[b].sum() / max(int(valid[b].sum()), 1) for b in range(new.shape[0])]
    return torch.stack(rows).mean()


def o_masked_grad(new, old, adv, mask, eps=0.2, mode="seq-mean-token-mean"):
    new, old, adv = (t.detach().to(F64) for t in (new, old, adv))
    valid = torch.ones_like(new, dtype=torch.bool) if mask is None else mask.bool()
    r = torch.exp(torch.where(valid, new - old, torch.zeros_like(new)))
    g = torch.where(r * adv <= r.clamp(1 - eps, 1 + eps) * adv, -adv * r, torch.zeros_like(r))
    if mode == "token-mean":
        g = g / max(int(valid.sum()), 1)
    else:
        g = g / valid.sum(1, keepdim=True).clamp(min=1) / new.shape[0]
    return torch.where(valid, g, torch.zeros_like(g))


def masked_inputs(lengths, T, seed, dtype=F64, garbage=5.0, spread=0.3):
    mask = right_padded(lengths, T)
    valid = mask.bool()
    old = uniform((len(lengths), T), seed, -3.0, -0.1)
    new = old + randn((len(lengths), T), seed + 1, spread)
    adv = randn((len(lengths), T), seed + 2)
    junk = uniform((len(lengths), T), seed + 3, -garbage, garbage)
    new = torch.where(valid, new, junk)
    old = torch.where(valid, old, -junk)
    adv = torch.where(valid, adv, junk)
    return new.to(dtype), old.to(dtype), adv.to(dtype), mask.to(dtype)


@check("masked-actor-loss")
def seq_mean_values(fn):
    for dtype, seed in ((F64, 20), (F32, 21)):
        new, old, adv, mask = masked_inputs([7, 3, 5, 2], 7, seed, dtype)
        expect_close(
            call(fn, new, old, adv, mask), o_masked(new, old, adv, mask), dtype, f"seq-mean-token-mean {dtype}"
        )


@check("masked-actor-loss")
def token_mean_values(fn):
    for dtype, seed in ((F64, 22), (F32, 23)):
        new, old, adv, mask = masked_inputs([7, 3, 5, 2], 7, seed, dtype)
        got = call(fn, new, old, adv, mask, loss_agg_mode="token-mean")
        expect_close(got, o_masked(new, old, adv, mask, mode="token-mean"), dtype, f"token-mean {dtype}")


@check("masked-actor-loss")
def clip_range_values(fn):
    new, old, adv, mask = masked_inputs([6, 4, 1], 6, 24, spread=0.5)
    for eps in (0.1, 0.3):
        for mode in ("seq-mean-token-mean", "token-mean"):
            got = call(fn, new, old, adv, mask, clip_range=eps, loss_agg_mode=mode)
            expect_close(got, o_masked(new, old, adv, mask, eps, mode), F64, f"clip_range={eps} {mode}")


@check("masked-actor-loss")
def mask_kinds(fn):
    new, old, adv, mask = masked_inputs([5, 2, 4], 5, 25)
    want = o_masked(new, old, adv, mask)
    expect_close(call(fn, new, old, adv, mask.bool()), want, F64, "bool mask")
    expect_close(call(fn, new, old, adv, mask), want, F64, "float mask")
    full = torch.ones_like(mask)
    expect_close(call(fn, new, old, adv, None), o_masked(new, old, adv, full), F64, "mask=None")


@check("masked-actor-loss")
def edge_rows(fn):
    new, old, adv, mask = masked_inputs([1, 0, 4, 1], 4, 26)
    for mode in ("seq-mean-token-mean", "token-mean"):
        got = call(fn, new, old, adv, mask, loss_agg_mode=mode)
        expect_close(got, o_masked(new, old, adv, mask, mode=mode), F64, f"length-1 and empty rows, {mode}")
    empty = torch.zeros_like(mask)
    expect_close(call(fn, new, old, adv, empty, loss_agg_mode="token-mean"), torch.tensor(0.0), F64, "no valid token")


@check("masked-actor-loss")
def padding_overflow(fn):
    new, old, adv, mask = masked_inputs([6, 3, 1], 6, 27, F32)
    valid = mask.bool()
    new = torch.where(valid, new, torch.full_like(new, 100.0))
    old = torch.where(valid, old, torch.full_like(old, -100.0))
    for mode in ("seq-mean-token-mean", "token-mean"):
        x = leaf(new)
        out = call(fn, x, old, adv, mask, loss_agg_mode=mode)
        expect_close(out, o_masked(new, old, adv, mask, mode=mode), F32, f"padded log-ratio 200, {mode}")
        (g,) = grad_of(out, [x], "gradient")
        expect_close(
            g, o_masked_grad(new, old, adv, mask, mode=mode), F32, f"gradient with padded log-ratio 200, {mode}"
        )


@check("masked-actor-loss")
def grad_both_modes(fn):
    new, old, adv, mask = masked_inputs([7, 3, 5, 2], 7, 28)
    for mode in ("seq-mean-token-mean", "token-mean"):
        x = leaf(new)
        (g,) = grad_of(call(fn, x, old, adv, mask, loss_agg_mode=mode), [x], f"gradient {mode}")
        expect_close(g, o_masked_grad(new, old, adv, mask, mode=mode), F64, f"d loss / d log_probs_new, {mode}")


@check("masked-actor-loss")
def mode_error(fn):
    new, old, adv, mask = masked_inputs([3, 2], 3, 29)
    for mode in ("token-sum", "seq-mean", "Token-Mean"):
        expect_raises(ValueError, fn, new, old, adv, mask, loss_agg_mode=mode, what=f"loss_agg_mode={mode!r}")


@check("masked-actor-loss")
def shape_error(fn):
    new, old, adv, mask = masked_inputs([4, 2, 3], 4, 30)
    expect_raises(ValueError, fn, new, old, adv[:, :1], mask, what="advantages [B, 1]")
    expect_raises(ValueError, fn, new, old[:, :1], adv, mask, what="log_probs_old [B, 1]")
    expect_raises(ValueError, fn, new, old, adv, mask[:, :1], what="action_mask [B, 1]")
    expect_raises(ValueError, fn, new, old, adv, mask[0], what="action_mask [T]")


@check("masked-actor-loss")
def dtype_and_dim(fn):
    for dtype in (F32, F64, BF16):
        new, old, adv, mask = masked_inputs([4, 2, 3], 4, 31, dtype)
        for mode in ("seq-mean-token-mean", "token-mean"):
            out = call(fn, new, old, adv, mask, loss_agg_mode=mode)
            expect_scalar(out, dtype, f"{dtype} {mode}")
            expect_close(out, o_masked(new, old, adv, mask, mode=mode), dtype, f"{dtype} {mode} value")


@check("masked-actor-loss")
def no_inplace(fn):
    new, old, adv, mask = masked_inputs([4, 2, 3], 4, 32)
    unchanged(fn, [new, old, adv, mask], "seq-mean-token-mean")
    unchanged(fn, [new, old, adv, mask.bool()], "token-mean, bool mask", loss_agg_mode="token-mean")


@check("masked-actor-loss", general=False)
def device_follows_inputs(fn):
    new, old, adv, mask = (t.to("meta") for t in masked_inputs([4, 2, 3], 4, 33, F32))
    on_meta(fn, (new, old, adv, None), "mask=None on the meta device")
    on_meta(fn, (new, old, adv, mask), "meta device")


# --------------------------------------------------------------------------------------------
# gae


def o_gae(rewards, values, mask, gamma=1.0, lam=0.95):
    r = rewards.detach().to(F64).tolist()
    v = values.detach().to(F64).tolist()
    B, T = rewards.shape
    valid = [[True] * T] * B if mask is None else mask.bool().tolist()
    adv = torch.zeros(B, T, dtype=F64)
    ret = torch.zeros(B, T, dtype=F64)
    for b in range(B):
        next_v, next_a = 0.0, 0.0
        for t in reversed(range(T)):
            if not valid[b][t]:
                next_v, next_a = 0.0, 0.0
                continue
            delta = r[b][t] + gamma * next_v - v[b][t]
            next_a = delta + gamma * lam * next_a
            next_v = v[b][t]
            adv[b, t] = next_a
            ret[b, t] = next_a + v[b][t]
    return adv, ret


def gae_inputs(lengths, T, seed, dtype=F64, garbage=9.0):
    mask = right_padded(lengths, T)
    valid = mask.bool()
    rewards = randn((len(lengths), T), seed, 0.5)
    values = randn((len(lengths), T), seed + 1, 1.0)
    junk = uniform((len(lengths), T), seed + 2, -garbage, garbage)
    rewards = torch.where(valid, rewards, junk)
    values = torch.where(valid, values, -junk)
    return rewards.to(dtype), values.to(dtype), mask.to(dtype)


def gae_outputs(out, what):
    if not isinstance(out, tuple) or len(out) != 2:
        raise Fail(f"{what}: expected a tuple (advantages, returns)")
    return out


@check("gae")
def advantages_values(fn):
    for dtype, seed in ((F64, 40), (F32, 41)):
        r, v, m = gae_inputs([8, 5, 3], 8, seed, dtype)
        adv, _ = gae_outputs(call(fn, r, v, m), "gae")
        expect_close(adv, o_gae(r, v, m)[0], dtype, f"advantages {dtype}")


@check("gae")
def returns_values(fn):
    for dtype, seed in ((F64, 42), (F32, 43)):
        r, v, m = gae_inputs([8, 5, 3], 8, seed, dtype)
        _, ret = gae_outputs(call(fn, r, v, m), "gae")
        expect_close(ret, o_gae(r, v, m)[1], dtype, f"returns {dtype}")


@check("gae")
def gamma_and_lam(fn):
    r, v, m = gae_inputs([7, 4, 6], 7, 44)
    for gamma, lam in ((0.9, 0.8), (0.99, 1.0), (0.5, 0.0)):
        adv, ret = gae_outputs(call(fn, r, v, m, gamma=gamma, lam=lam), "gae")
        want_adv, want_ret = o_gae(r, v, m, gamma, lam)
        expect_close(adv, want_adv, F64, f"advantages gamma={gamma} lam={lam}")
        expect_close(ret, want_ret, F64, f"returns gamma={gamma} lam={lam}")


@check("gae")
def no_bootstrap_from_padding(fn):
    r, v, m = gae_inputs([3, 2], 5, 45)
    v = torch.where(m.bool(), v, torch.full_like(v, 1000.0))
    for gamma in (1.0, 0.9):
        adv, _ = gae_outputs(call(fn, r, v, m, gamma=gamma, lam=0.95), "gae")
        expect_close(adv, o_gae(r, v, m, gamma)[0], F64, f"values of 1000 at padding, gamma={gamma}")


@check("gae")
def padding_is_zero(fn):
    r, v, m = gae_inputs([6, 2, 4], 6, 46)
    adv, ret = gae_outputs(call(fn, r, v, m), "gae")
    pad = ~m.bool()
    expect_equal(as_tensor(adv, "advantages")[pad], torch.zeros(int(pad.sum()), dtype=F64), "advantages at padding")
    expect_equal(as_tensor(ret, "returns")[pad], torch.zeros(int(pad.sum()), dtype=F64), "returns at padding")


@check("gae")
def edge_rows(fn):
    r, v, m = gae_inputs([1, 0, 5, 1], 5, 47)
    adv, ret = gae_outputs(call(fn, r, v, m), "gae")
    want_adv, want_ret = o_gae(r, v, m)
    expect_close(adv, want_adv, F64, "advantages, length-1 and empty rows")
    expect_close(ret, want_ret, F64, "returns, length-1 and empty rows")


@check("gae")
def mask_none(fn):
    r, v, _ = gae_inputs([6, 6], 6, 48)
    adv, ret = gae_outputs(call(fn, r, v), "gae")
    want_adv, want_ret = o_gae(r, v, None)
    expect_close(adv, want_adv, F64, "advantages, mask=None")
    expect_close(ret, want_ret, F64, "returns, mask=None")


@check("gae")
def bool_mask(fn):
    r, v, m = gae_inputs([6, 3], 6, 49)
    adv, ret = gae_outputs(call(fn, r, v, m.bool()), "gae")
    want_adv, want_ret = o_gae(r, v, m)
    expect_close(adv, want_adv, F64, "advantages, bool mask")
    expect_close(ret, want_ret, F64, "returns, bool mask")


@check("gae")
def detached(fn):
    r, v, m = gae_inputs([5, 3], 5, 50)
    for which in ("values", "rewards", "both"):
        rr = leaf(r, which in ("rewards", "both"))
        vv = leaf(v, which in ("values", "both"))
        adv, ret = gae_outputs(call(fn, rr, vv, m), "gae")
        if as_tensor(adv, "advantages").requires_grad or as_tensor(ret, "returns").requires_grad:
            raise Fail(f"an output requires grad when {which} requires grad")


@check("gae")
def shape_error(fn):
    r, v, m = gae_inputs([4, 2], 4, 51)
    expect_raises(ValueError, fn, r, v[:, :1], m, what="values [B, 1]")
    expect_raises(ValueError, fn, r, v, m[:, :1], what="mask [B, 1]")
    expect_raises(ValueError, fn, r, v, m[0], what="mask [T]")


@check("gae")
def dtypes(fn):
    for dtype in (F32, F64, BF16):
        r, v, m = gae_inputs([5, 3], 5, 52, dtype)
        for mask in (m, None):
            adv, ret = gae_outputs(call(fn, r, v, mask), "gae")
            for name, t in (("advantages", adv), ("returns", ret)):
                if as_tensor(t, name).dtype != dtype:
                    raise Fail(f"{name} in {t.dtype} for {dtype} inputs (mask={'None' if mask is None else 'given'})")
            expect_close(adv, o_gae(r, v, mask)[0], dtype, f"advantages {dtype}")


@check("gae")
def no_inplace(fn):
    r, v, m = gae_inputs([5, 3], 5, 53)
    unchanged(fn, [r, v, m], "gae")
    unchanged(fn, [r, leaf(v), m.bool()], "gae with values requiring grad")


@check("gae")
def long_float32(fn):
    r, v, m = gae_inputs([2000, 1500], 2000, 54, F32)
    adv, ret = gae_outputs(call(fn, r, v, m, gamma=1.0, lam=0.95), "gae")
    want_adv, want_ret = o_gae(r, v, m)
    expect_close(adv, want_adv, F32, "advantages, T = 2000")
    expect_close(ret, want_ret, F32, "returns, T = 2000")


@check("gae")
def bf16_long(fn):
    r, v, m = gae_inputs([400, 300], 400, 55, BF16)
    r = (r.to(F64) + 1.0).to(BF16)
    adv, _ = gae_outputs(call(fn, r, v, m, gamma=1.0, lam=0.99), "gae")
    expect_close(adv, o_gae(r, v, m, 1.0, 0.99)[0], BF16, "bfloat16 advantages, T = 400")


@check("gae")
def no_state_between_calls(fn):
    r, v, m = gae_inputs([6, 4], 6, 56)
    for gamma, lam in ((0.9, 0.8), (1.0, 0.5), (0.7, 0.95)):
        adv, _ = gae_outputs(call(fn, r, v, m, gamma=gamma, lam=lam), "gae")
        expect_close(adv, o_gae(r, v, m, gamma, lam)[0], F64, f"call after others, gamma={gamma} lam={lam}")


def _gae_lean(rewards, values, mask=None, gamma=1.0, lam=0.95):
    with torch.no_grad():
        valid = mask.bool()
        r = torch.where(valid, rewards, torch.zeros_like(rewards))
        v = torch.where(valid, values, torch.zeros_like(values))
        adv = torch.zeros_like(r)
        next_v = torch.zeros_like(r[:, 0])
        next_a = torch.zeros_like(r[:, 0])
        for t in range(r.shape[1] - 1, -1, -1):
            next_a = torch.where(valid[:, t], r[:, t] + gamma * next_v - v[:, t] + gamma * lam * next_a, 0.0)
            adv[:, t] = next_a
            next_v = v[:, t]
        return adv, torch.where(valid, adv + v, 0.0)


@check("gae")
def memory(fn):
    r, v, m = gae_inputs([3072, 3000, 2500, 1024], 3072, 57, F32)
    ref = ref_peak("gae", lambda: _gae_lean(r, v, m))
    try:
        peak = peak_bytes(lambda: fn(r, leaf(v), m))
    except Exception as exc:
        raise Fail(f"raised {type(exc).__name__}") from None
    within_budget(peak, ref, "4 x 3072")


@check("gae", general=False)
def device_follows_inputs(fn):
    r, v, m = (t.to("meta") for t in gae_inputs([4, 2], 4, 58, F32))
    on_meta(fn, (r, v, m), "meta device")
    on_meta(fn, (r, v, None), "mask=None on the meta device")


# --------------------------------------------------------------------------------------------
# critic-loss


def o_critic(values, old, ret, mask, clip=None):
    v, o, R = (t.detach().to(F64) for t in (values, old, ret))
    valid = torch.ones_like(v, dtype=torch.bool) if mask is None else mask.bool()
    zero = torch.zeros_like(v)
    v, o, R = (torch.where(valid, t, zero) for t in (v, o, R))
    per = (v - R) ** 2
    if clip is not None:
        vc = o + (v - o).clamp(-clip, clip)
        per = torch.maximum(per, (vc - R) ** 2)
    per = torch.where(valid, per, zero)
    rows = per.sum(1) / valid.sum(1).clamp(min=1)
    return 0.5 * rows.mean()


def o_critic_grad(values, old, ret, mask, clip=None):
    v, o, R = (t.detach().to(F64) for t in (values, old, ret))
    valid = torch.ones_like(v, dtype=torch.bool) if mask is None else mask.bool()
    g = 2 * (v - R)
    if clip is not None:
        vc = o + (v - o).clamp(-clip, clip)
        clipped_larger = (vc - R) ** 2 > (v - R) ** 2
        g = torch.where(clipped_larger, torch.zeros_like(g), g)
    g = 0.5 * g / valid.sum(1, keepdim=True).clamp(min=1) / v.shape[0]
    return torch.where(valid, g, torch.zeros_like(g))


def critic_inputs(lengths, T, seed, dtype=F64, garbage=9.0):
    mask = right_padded(lengths, T)
    valid = mask.bool()
    old = randn((len(lengths), T), seed, 1.0)
    values = old + randn((len(lengths), T), seed + 1, 0.4)
    ret = old + randn((len(lengths), T), seed + 2, 0.8)
    junk = uniform((len(lengths), T), seed + 3, -garbage, garbage)
    values = torch.where(valid, values, junk)
    old = torch.where(valid, old, -junk)
    ret = torch.where(valid, ret, junk * 0.5)
    return values.to(dtype), old.to(dtype), ret.to(dtype), mask.to(dtype)


@check("critic-loss")
def unclipped_values(fn):
    for dtype, seed in ((F64, 60), (F32, 61)):
        v, o, R, m = critic_inputs([6, 3, 5], 6, seed, dtype)
        expect_close(call(fn, v, o, R, m), o_critic(v, o, R, m), dtype, f"clip_range=None {dtype}")


@check("critic-loss")
def clipped_values(fn):
    for dtype, seed in ((F64, 62), (F32, 63)):
        v, o, R, m = critic_inputs([6, 3, 5], 6, seed, dtype)
        for clip in (0.2, 0.5):
            expect_close(call(fn, v, o, R, m, clip_range=clip), o_critic(v, o, R, m, clip), dtype, f"clip_range={clip}")


@check("critic-loss")
def clip_zero(fn):
    v, o, R, m = critic_inputs([5, 4], 5, 64)
    expect_close(call(fn, v, o, R, m, clip_range=0.0), o_critic(v, o, R, m, 0.0), F64, "clip_range=0.0")


@check("critic-loss")
def mask_kinds(fn):
    v, o, R, m = critic_inputs([5, 2, 4], 5, 65)
    expect_close(call(fn, v, o, R, m.bool(), clip_range=0.2), o_critic(v, o, R, m, 0.2), F64, "bool mask")
    expect_close(call(fn, v, o, R), o_critic(v, o, R, None), F64, "mask=None")


@check("critic-loss")
def edge_rows(fn):
    v, o, R, m = critic_inputs([1, 0, 4, 1], 4, 66)
    for clip in (None, 0.2):
        expect_close(call(fn, v, o, R, m, clip_range=clip), o_critic(v, o, R, m, clip), F64, f"edge rows clip={clip}")


@check("critic-loss")
def padding_huge(fn):
    v, o, R, m = critic_inputs([5, 2, 3], 5, 67, F32)
    valid = m.bool()
    v = torch.where(valid, v, torch.full_like(v, 1e20))
    o = torch.where(valid, o, torch.full_like(o, -1e20))
    R = torch.where(valid, R, torch.full_like(R, -1e20))
    for clip in (None, 0.2):
        x = leaf(v)
        out = call(fn, x, o, R, m, clip_range=clip)
        expect_close(out, o_critic(v, o, R, m, clip), F32, f"padding near 1e20, clip={clip}")
        (g,) = grad_of(out, [x], "gradient")
        expect_close(g, o_critic_grad(v, o, R, m, clip), F32, f"gradient with padding near 1e20, clip={clip}")


@check("critic-loss")
def grad_values(fn):
    v, o, R, m = critic_inputs([6, 3, 5], 6, 68)
    for clip in (None, 0.2, 0.0):
        x = leaf(v)
        (g,) = grad_of(call(fn, x, o, R, m, clip_range=clip), [x], "gradient")
        expect_close(g, o_critic_grad(v, o, R, m, clip), F64, f"d loss / d values, clip={clip}")


@check("critic-loss")
def no_grad_to_targets(fn):
    v, o, R, m = critic_inputs([5, 3], 5, 69)
    for clip in (None, 0.2):
        x, oo, rr = leaf(v), leaf(o), leaf(R)
        out = call(fn, x, oo, rr, m, clip_range=clip)
        grad_of(out, [x], "gradient")
        if oo.grad is not None or rr.grad is not None:
            raise Fail(f"old_values or returns received a gradient (clip={clip})")


@check("critic-loss")
def shape_error(fn):
    v, o, R, m = critic_inputs([4, 2], 4, 70)
    expect_raises(ValueError, fn, v, o, R[:, :1], m, what="returns [B, 1]")
    expect_raises(ValueError, fn, v, o[:, :1], R, m, what="old_values [B, 1]")
    expect_raises(ValueError, fn, v, o, R, m[:, :1], what="mask [B, 1]")
    expect_raises(ValueError, fn, v, o, R, m[0], what="mask [T]")


@check("critic-loss")
def dtype_and_dim(fn):
    for dtype in (F32, F64, BF16):
        v, o, R, m = critic_inputs([4, 2, 3], 4, 71, dtype)
        for clip in (None, 0.2):
            out = call(fn, v, o, R, m, clip_range=clip)
            expect_scalar(out, dtype, f"{dtype} clip={clip}")
            expect_close(out, o_critic(v, o, R, m, clip), dtype, f"{dtype} value clip={clip}")
        out = call(fn, v, o, R, None)
        expect_scalar(out, dtype, f"{dtype} mask=None")


@check("critic-loss")
def no_inplace(fn):
    v, o, R, m = critic_inputs([4, 2, 3], 4, 72)
    unchanged(fn, [v, o, R, m], "critic loss", clip_range=0.2)
    unchanged(fn, [v, o, R, m.bool()], "critic loss, bool mask")


# --------------------------------------------------------------------------------------------
# token-rewards


def o_tok(scores, old, ref, mask, kl_coef=0.1):
    o, r, s = old.detach().to(F64), ref.detach().to(F64), scores.detach().to(F64)
    B, T = o.shape
    valid = torch.ones(B, T, dtype=torch.bool) if mask is None else mask.bool()
    out = torch.zeros(B, T, dtype=F64)
    for b in range(B):
        last = -1
        for t in range(T):
            if valid[b, t]:
                out[b, t] = -kl_coef * (o[b, t] - r[b, t])
                last = t
        if last >= 0:
            out[b, last] += s[b]
    return out


def tok_inputs(lengths, T, seed, dtype=F64, garbage=7.0):
    mask = right_padded(lengths, T)
    valid = mask.bool()
    old = uniform((len(lengths), T), seed, -4.0, -0.1)
    ref = old + randn((len(lengths), T), seed + 1, 0.5)
    junk = uniform((len(lengths), T), seed + 2, -garbage, garbage)
    old = torch.where(valid, old, junk)
    ref = torch.where(valid, ref, -junk)
    scores = randn((len(lengths),), seed + 3, 2.0)
    return scores.to(dtype), old.to(dtype), ref.to(dtype), mask.to(dtype)


@check("token-rewards")
def reward_values(fn):
    for dtype, seed in ((F64, 80), (F32, 81)):
        s, o, r, m = tok_inputs([6, 3, 5, 2], 6, seed, dtype)
        expect_close(call(fn, s, o, r, m), o_tok(s, o, r, m), dtype, f"rewards {dtype}")


@check("token-rewards")
def kl_coef_values(fn):
    s, o, r, m = tok_inputs([6, 3, 5], 6, 82)
    for coef in (0.3, 0.02):
        expect_close(call(fn, s, o, r, m, kl_coef=coef), o_tok(s, o, r, m, coef), F64, f"kl_coef={coef}")


@check("token-rewards")
def score_at_last_valid(fn):
    s, _, _, m = tok_inputs([2, 5, 3], 5, 83)
    zeros = torch.zeros(3, 5, dtype=F64)
    expect_close(call(fn, s, zeros, zeros, m), o_tok(s, zeros, zeros, m), F64, "score position")


@check("token-rewards")
def padding_is_zero(fn):
    s, o, r, m = tok_inputs([6, 2, 4], 6, 84)
    out = as_tensor(call(fn, s, o, r, m), "rewards")
    pad = ~m.bool()
    expect_equal(out[pad], torch.zeros(int(pad.sum()), dtype=F64), "rewards at padding")


@check("token-rewards")
def mask_none_and_bool(fn):
    s, o, r, m = tok_inputs([5, 2, 4], 5, 85)
    expect_close(call(fn, s, o, r, m.bool()), o_tok(s, o, r, m), F64, "bool mask")
    expect_close(call(fn, s, o, r), o_tok(s, o, r, None), F64, "mask=None")


@check("token-rewards")
def edge_rows(fn):
    s, o, r, m = tok_inputs([1, 0, 4, 1], 4, 86)
    expect_close(call(fn, s, o, r, m), o_tok(s, o, r, m), F64, "length-1 and empty rows")


@check("token-rewards")
def huge_padding(fn):
    s, o, r, m = tok_inputs([5, 2, 3], 5, 87, F32)
    valid = m.bool()
    o = torch.where(valid, o, torch.full_like(o, 3e38))
    r = torch.where(valid, r, torch.full_like(r, -3e38))
    out = as_tensor(call(fn, s, o, r, m), "rewards")
    expect_close(out, o_tok(s, torch.where(valid, o, 0.0), torch.where(valid, r, 0.0), m), F32, "padding near 3e38")


@check("token-rewards")
def detached(fn):
    s, o, r, m = tok_inputs([5, 3], 5, 88)
    for which in ("log_probs_old", "ref_log_probs", "scores"):
        args = [leaf(s, which == "scores"), leaf(o, which == "log_probs_old"), leaf(r, which == "ref_log_probs")]
        out = as_tensor(call(fn, *args, m), "rewards")
        if out.requires_grad:
            raise Fail(f"the rewards require grad when {which} does")


@check("token-rewards")
def shape_error(fn):
    s, o, r, m = tok_inputs([4, 2, 3], 4, 89)
    expect_raises(ValueError, fn, s[:, None], o, r, m, what="scores [B, 1]")
    expect_raises(ValueError, fn, torch.cat([s, s]), o, r, m, what="scores [2B]")
    expect_raises(ValueError, fn, s, o, r[:, :1], m, what="ref_log_probs [B, 1]")
    expect_raises(ValueError, fn, s, o, r, m[:, :1], what="mask [B, 1]")


@check("token-rewards")
def dtypes(fn):
    for dtype in (F32, F64, BF16):
        s, o, r, m = tok_inputs([4, 2, 3], 4, 90, dtype)
        for mask in (m, None):
            out = as_tensor(call(fn, s, o, r, mask), "rewards")
            if out.dtype != dtype:
                raise Fail(f"rewards in {out.dtype} for {dtype} inputs")
            expect_close(out, o_tok(s, o, r, mask), dtype, f"{dtype} rewards")


@check("token-rewards")
def no_inplace(fn):
    s, o, r, m = tok_inputs([4, 2, 3], 4, 91)
    unchanged(fn, [s, o, r, m], "token rewards")
    unchanged(fn, [s, o, r, m.bool()], "token rewards, bool mask")


@check("token-rewards", general=False)
def device_follows_inputs(fn):
    s, o, r, m = (t.to("meta") for t in tok_inputs([4, 2, 3], 4, 92, F32))
    on_meta(fn, (s, o, r, m), "meta device")
    on_meta(fn, (s, o, r, None), "mask=None on the meta device")


# --------------------------------------------------------------------------------------------
# pairwise-loss


def _neg_logsigmoid(x: float) -> float:
    return math.log1p(math.exp(-x)) if x >= 0 else -x + math.log1p(math.exp(x))


def _gap(chosen, rejected, margin):
    x = chosen.detach().to(F64) - rejected.detach().to(F64)
    if margin is not None:
        x = x - (margin.detach().to(F64) if isinstance(margin, torch.Tensor) else margin)
    return x


def o_pair(chosen, rejected, margin=None):
    x = _gap(chosen, rejected, margin)
    return torch.tensor(sum(_neg_logsigmoid(v) for v in x.reshape(-1).tolist()) / x.numel(), dtype=F64)


def o_pair_grad(chosen, rejected, margin=None):
    """d loss / d chosen; d loss / d rejected is its negative."""
    x = _gap(chosen, rejected, margin)
    return -torch.sigmoid(-x) / x.numel()


def pair_inputs(shape, seed, dtype=F64, scale=2.0):
    c = randn(shape, seed, scale)
    r = randn(shape, seed + 1, scale)
    return c.to(dtype), r.to(dtype)


@check("pairwise-loss")
def values_no_margin(fn):
    for dtype, seed in ((F64, 100), (F32, 101)):
        c, r = pair_inputs((12,), seed, dtype)
        expect_close(call(fn, c, r), o_pair(c, r), dtype, f"no margin {dtype}")


@check("pairwise-loss")
def scalar_margin(fn):
    c, r = pair_inputs((10,), 102)
    for margin in (0.5, 2, torch.tensor(1.25, dtype=F64), -0.75):
        expect_close(call(fn, c, r, margin=margin), o_pair(c, r, margin), F64, f"margin={margin}")


@check("pairwise-loss")
def tensor_margin(fn):
    c, r = pair_inputs((10,), 103)
    margin = uniform((10,), 104, 0.0, 2.0)
    expect_close(call(fn, c, r, margin=margin), o_pair(c, r, margin), F64, "per-pair margin")
    c2, r2 = pair_inputs((3, 4), 105)
    m2 = uniform((3, 4), 106, 0.0, 2.0)
    expect_close(call(fn, c2, r2, margin=m2), o_pair(c2, r2, m2), F64, "per-pair margin [3, 4]")


@check("pairwise-loss")
def hand_values(fn):
    expect_close(call(fn, torch.tensor([1.0, -3.0]), torch.tensor([1.0, -3.0])), math.log(2.0), F32, "equal rewards")
    expect_close(call(fn, torch.tensor([2.0]), torch.tensor([1.0]), margin=1.0), math.log(2.0), F32, "gap 1, margin 1")
    expect_close(call(fn, torch.tensor([3.0]), torch.tensor([1.0])), math.log1p(math.exp(-2.0)), F32, "gap 2")


@check("pairwise-loss")
def large_gaps(fn):
    c = torch.tensor([0.0, 300.0, -150.0, 0.0], dtype=F32)
    r = torch.tensor([200.0, 0.0, 350.0, -500.0], dtype=F32)
    x, y = leaf(c), leaf(r)
    out = call(fn, x, y)
    expect_close(out, o_pair(c, r), F32, "gaps -200, +300, -500, +500")
    gc, gr = grad_of(out, [x, y], "gradient")
    expect_close(gc, o_pair_grad(c, r), F32, "d loss / d chosen at large gaps")
    expect_close(gr, -o_pair_grad(c, r), F32, "d loss / d rejected at large gaps")


@check("pairwise-loss")
def grad_both_inputs(fn):
    c, r = pair_inputs((9,), 107)
    r[2] = c[2]
    r[5] = c[5]
    x, y = leaf(c), leaf(r)
    gc, gr = grad_of(call(fn, x, y), [x, y], "gradient")
    expect_close(gc, o_pair_grad(c, r), F64, "d loss / d chosen_rewards")
    expect_close(gr, -o_pair_grad(c, r), F64, "d loss / d rejected_rewards")


@check("pairwise-loss")
def grad_at_zero_gap(fn):
    c = torch.tensor([0.5, -2.0, 3.0, 0.0], dtype=F64)
    x, y = leaf(c), leaf(c)
    gc, gr = grad_of(call(fn, x, y), [x, y], "gradient at gap 0")
    expect_close(gc, torch.full((4,), -0.5 / 4, dtype=F64), F64, "d loss / d chosen at a gap of exactly 0")
    expect_close(gr, torch.full((4,), 0.5 / 4, dtype=F64), F64, "d loss / d rejected at a gap of exactly 0")
    x, y = leaf(c + 1.0), leaf(c)
    gc, _ = grad_of(call(fn, x, y, margin=1.0), [x, y], "gradient at gap - margin = 0")
    expect_close(gc, torch.full((4,), -0.5 / 4, dtype=F64), F64, "d loss / d chosen at gap - margin = 0")


@check("pairwise-loss")
def shape_error(fn):
    c, r = pair_inputs((6,), 108)
    expect_raises(ValueError, fn, c, r[:, None], what="rejected [B, 1] against [B]")
    expect_raises(ValueError, fn, c, r[:1], what="rejected [1] against [B]")
    expect_raises(ValueError, fn, c, r, margin=torch.ones(1, dtype=F64), what="margin [1] against [B]")
    expect_raises(ValueError, fn, c, r, margin=torch.ones(6, 1, dtype=F64), what="margin [B, 1] against [B]")


@check("pairwise-loss")
def dtype_and_dim(fn):
    for dtype in (F32, F64, BF16):
        c, r = pair_inputs((8,), 109, dtype)
        for margin in (None, 0.5, torch.tensor(0.5, dtype=dtype), uniform((8,), 110, 0.0, 1.0, dtype)):
            out = call(fn, c, r, margin=margin)
            expect_scalar(out, dtype, f"{dtype} inputs")
            expect_close(out, o_pair(c, r, margin), dtype, f"{dtype} value")


@check("pairwise-loss")
def no_inplace(fn):
    c, r = pair_inputs((8,), 111)
    margin = uniform((8,), 112, 0.0, 1.0)
    unchanged(fn, [c, r], "pairwise loss")
    unchanged(fn, [c, r, margin], "pairwise loss with a tensor margin")


@check("pairwise-loss")
def any_shape(fn):
    for shape in ((3, 5), (2, 3, 4)):
        c, r = pair_inputs(shape, 113)
        expect_close(call(fn, c, r), o_pair(c, r), F64, f"rewards of shape {shape}")


# --------------------------------------------------------------------------------------------
# whiten


def o_whiten(values, mask, shift_mean=True, eps=1e-8):
    """Expected values at the valid positions, and the cancellation allowance there."""
    x = values.detach().to(F64)
    valid = torch.ones_like(x, dtype=torch.bool) if mask is None else mask.bool()
    picked = x[valid]
    n = picked.numel()
    mean = picked.mean()
    var = ((picked - mean) ** 2).sum() / (n - 1)
    if bool(picked.max() == picked.min()):
        out = torch.zeros_like(picked)
    else:
        out = (picked - mean) / torch.sqrt(var + eps)
    if not shift_mean:
        out = out + mean
    u = UNIT[values.dtype]
    allowance = n * u * mean.abs() / torch.sqrt(var + eps) * (1 + out.abs())
    return out, allowance


def expect_whiten(fn, values, mask, what, **kwargs):
    out = as_tensor(call(fn, values, mask, **kwargs), what)
    if out.shape != values.shape:
        raise Fail(f"{what}: shape {tuple(out.shape)}, expected {tuple(values.shape)}")
    valid = torch.ones_like(values, dtype=torch.bool) if mask is None else mask.bool()
    want, allowance = o_whiten(values, mask, **kwargs)
    expect_close(out[valid], want, values.dtype, what, extra_atol=allowance)
    return out


def whiten_inputs(lengths, T, seed, dtype=F64, garbage=50.0, loc=0.5, scale=2.0):
    mask = right_padded(lengths, T)
    x = randn((len(lengths), T), seed, scale) + loc
    x = torch.where(mask.bool(), x, uniform((len(lengths), T), seed + 1, -garbage, garbage))
    return x.to(dtype), mask.to(dtype)


@check("whiten")
def whitened_values(fn):
    for dtype, seed in ((F64, 120), (F32, 121)):
        x, m = whiten_inputs([7, 3, 5], 7, seed, dtype)
        expect_whiten(fn, x, m, f"whitened {dtype}")


@check("whiten")
def shift_mean_false(fn):
    x, m = whiten_inputs([7, 3, 5], 7, 122, loc=3.0)
    expect_whiten(fn, x, m, "shift_mean=False", shift_mean=False)


@check("whiten")
def bessel_few_values(fn):
    x, m = whiten_inputs([2, 0], 4, 123)
    expect_whiten(fn, x, m, "two valid values")
    x, m = whiten_inputs([1, 2], 3, 124)
    expect_whiten(fn, x, m, "three valid values")


@check("whiten")
def any_shape(fn):
    x = randn((9,), 125)
    expect_whiten(fn, x, None, "1-D, no mask")
    x3 = randn((2, 3, 4), 126)
    m3 = (uniform((2, 3, 4), 127, 0, 1) > 0.3).to(F64)
    expect_whiten(fn, x3, m3, "3-D with a mask")
    expect_whiten(fn, x3, None, "3-D, no mask")


@check("whiten")
def near_constant(fn):
    # |mean| / std about 1e3 (float32) and 1e8 (float64): centered variances stay exact
    x = (100.0 + randn((3, 6), 128, 0.1)).to(F32)
    expect_whiten(fn, x, None, "100 + 0.1 noise, float32")
    x64 = 1e6 + randn((3, 6), 129, 1e-2)
    expect_whiten(fn, x64, None, "1e6 + 1e-2 noise, float64")


@check("whiten")
def constant_is_zero(fn):
    for value, dtype, n in ((3.0, F32, 4), (0.1, F32, 7), (0.1, F64, 7), (-2.7, F32, 5), (1e4 / 3, F32, 9)):
        x = torch.full((n,), value, dtype=dtype)
        out = call(fn, x)
        expect_equal(out, torch.zeros(n, dtype=dtype), f"{n} copies of {value} ({dtype})")
    x, m = whiten_inputs([4, 3], 5, 130, F32)
    x = torch.where(m.bool(), torch.full_like(x, 0.1), x)
    out = as_tensor(call(fn, x, m), "constant valid values with padding")
    expect_equal(out[m.bool()], torch.zeros(7, dtype=F32), "constant valid values 0.1 with padding")


@check("whiten")
def constant_shift_mean_false(fn):
    x = torch.full((7,), 0.1, dtype=F32)
    out = call(fn, x, shift_mean=False)
    expect_close(out, torch.full((7,), 0.1, dtype=F64), F32, "seven 0.1s, shift_mean=False")


@check("whiten")
def eps_inside_sqrt(fn):
    x, m = whiten_inputs([5, 4], 5, 131, scale=0.3)
    expect_whiten(fn, x, m, "eps=0.5", eps=0.5)
    expect_whiten(fn, x, m, "eps=0.5, shift_mean=False", eps=0.5, shift_mean=False)


@check("whiten")
def too_few_valid(fn):
    x, _ = whiten_inputs([3], 3, 132)
    expect_raises(ValueError, fn, x, torch.tensor([[1.0, 0.0, 0.0]], dtype=F64), what="one valid value")
    expect_raises(ValueError, fn, x, torch.zeros(1, 3, dtype=F64), what="no valid value")
    expect_raises(ValueError, fn, torch.tensor([2.0], dtype=F64), what="a single value, no mask")


@check("whiten")
def mask_shape_error(fn):
    x, m = whiten_inputs([4, 2], 4, 133)
    expect_raises(ValueError, fn, x, m[0], what="mask [T] against [B, T]")
    expect_raises(ValueError, fn, x, m[:, :1], what="mask [B, 1] against [B, T]")


@check("whiten")
def dtypes(fn):
    for dtype in (F32, F64, BF16):
        x, m = whiten_inputs([5, 3], 5, 134, dtype)
        for mask in (m, None):
            out = as_tensor(call(fn, x, mask), "whiten")
            if out.dtype != dtype:
                raise Fail(f"result in {out.dtype} for {dtype} values")
        expect_whiten(fn, x, m, f"{dtype} values")


@check("whiten")
def no_inplace(fn):
    x, m = whiten_inputs([5, 3], 5, 135)
    unchanged(fn, [x, m], "whiten")
    unchanged(fn, [x, m.bool()], "whiten, bool mask, shift_mean=False", shift_mean=False)
    unchanged(fn, [x.clone()], "whiten, no mask")


@check("whiten")
def huge_padding(fn):
    x, m = whiten_inputs([5, 3], 5, 136, F32)
    x = torch.where(m.bool(), x, torch.full_like(x, 1e20))
    expect_whiten(fn, x, m, "padding of 1e20")


@check("whiten")
def bf16_near_constant(fn):
    # bfloat16 steps are 0.5 near 100: the mean 100.28125 of these values is not representable
    steps = torch.tensor([0, 1, 1, 0, 2, 1, 0, 0, 1, 0, 1, 1, 0, 0, 1, 0], dtype=F64)
    x = (100.0 + 0.5 * steps).reshape(2, 8).to(BF16)
    expect_whiten(fn, x, None, "bfloat16 values 100, 100.5 and 101")


# --------------------------------------------------------------------------------------------
# kl-penalty


def o_kl(lp, ref, kind):
    d = lp.detach().to(F64) - ref.detach().to(F64)
    if kind == "k1":
        return d
    if kind == "k2":
        return 0.5 * d * d
    r = -d
    return torch.expm1(r) - r


def o_kl_grad(lp, ref, kind):
    d = lp.detach().to(F64) - ref.detach().to(F64)
    if kind == "k1":
        return torch.ones_like(d)
    if kind == "k2":
        return d
    return -torch.expm1(-d)


def kl_inputs(shape, seed, dtype=F64, spread=0.7):
    lp = uniform(shape, seed, -5.0, -0.05)
    ref = lp + randn(shape, seed + 1, spread)
    return lp.to(dtype), ref.to(dtype)


def _kl_values(fn, kind, default=False):
    for dtype, seed in ((F64, 140), (F32, 141)):
        lp, ref = kl_inputs((4, 6), seed, dtype)
        got = call(fn, lp, ref) if default else call(fn, lp, ref, kind)
        expect_close(got, o_kl(lp, ref, kind), dtype, f"{kind} {dtype}")


@check("kl-penalty")
def k1_values(fn):
    _kl_values(fn, "k1")


@check("kl-penalty")
def k1_is_default(fn):
    _kl_values(fn, "k1", default=True)


@check("kl-penalty")
def k2_values(fn):
    _kl_values(fn, "k2")


@check("kl-penalty")
def k3_values(fn):
    _kl_values(fn, "k3")


@check("kl-penalty")
def extreme_log_probs(fn):
    lp = torch.tensor([-0.5, -200.0, -150.0, -3.0, -199.0], dtype=F32)
    ref = torch.tensor([-200.0, -190.0, -150.5, -180.0, -200.0], dtype=F32)
    for kind in ("k1", "k2", "k3"):
        expect_close(call(fn, lp, ref, kind), o_kl(lp, ref, kind), F32, f"{kind} with log-probs down to -200")


@check("kl-penalty")
def k3_tiny_ratio(fn):
    lp = uniform((12,), 142, -3.0, -1.0, F32)
    r = torch.tensor([2e-5, -3e-5, 5e-5, -8e-5, 9e-5, -6e-5, 4e-5, -2.5e-5, 7e-5, -9.5e-5, 3e-5, -5e-5])
    ref = (lp.to(F64) + r.to(F64)).to(F32)
    got = as_tensor(call(fn, lp, ref, "k3"), "k3").detach().to(F64)
    want = o_kl(lp, ref, "k3")
    rel = ((got - want).abs() / want.abs()).max().item()
    if not rel <= 3e-2:
        raise Fail(f"k3 for |r| < 1e-4 (float32): relative error {rel:.3g}, allowed 3e-2")


@check("kl-penalty")
def k3_small_ratio(fn):
    lp = uniform((10,), 143, -3.0, -1.0, F32)
    r = torch.tensor([0.002, -0.004, 0.008, -0.015, 0.03, -0.05, 0.09, -0.12, 0.2, -0.3])
    ref = (lp.to(F64) + r.to(F64)).to(F32)
    expect_close(call(fn, lp, ref, "k3"), o_kl(lp, ref, "k3"), F32, "k3 for |r| in [2e-3, 0.3]")


@check("kl-penalty")
def grad_log_probs(fn):
    for kind in ("k1", "k2", "k3"):
        lp, ref = kl_inputs((3, 5), 144)
        x = leaf(lp)
        out = as_tensor(call(fn, x, ref, kind), kind)
        w = randn(tuple(out.shape), 145)
        (g,) = grad_of((out * w).sum(), [x], f"gradient of {kind}")
        expect_close(g, o_kl_grad(lp, ref, kind) * w, F64, f"d {kind} / d log_probs")


@check("kl-penalty")
def grad_k3_small_ratio(fn):
    lp = uniform((8,), 153, -3.0, -1.0)
    r = torch.tensor([1e-5, -2e-5, 5e-5, -1e-4, 3e-4, -5e-4, 8e-4, -9e-4], dtype=F64)
    ref = lp + r
    x = leaf(lp)
    out = as_tensor(call(fn, x, ref, "k3"), "k3")
    (g,) = grad_of(out.sum(), [x], "gradient of k3 for tiny ratios")
    expect_close(g, o_kl_grad(lp, ref, "k3"), F64, "d k3 / d log_probs for |r| < 1e-3")


@check("kl-penalty")
def any_shape(fn):
    for shape in ((), (5,), (2, 3, 4), (2, 1, 3, 2)):
        lp, ref = kl_inputs(shape, 146)
        for kind in ("k1", "k2", "k3"):
            expect_close(call(fn, lp, ref, kind), o_kl(lp, ref, kind), F64, f"{kind} shape {shape}")


@check("kl-penalty")
def unknown_kind(fn):
    lp, ref = kl_inputs((4,), 147)
    for kind in ("k4", "kl", "", "k1 "):
        expect_raises(ValueError, fn, lp, ref, kind, what=f"kind={kind!r}")


@check("kl-penalty")
def kind_is_case_sensitive(fn):
    lp, ref = kl_inputs((4,), 148)
    for kind in ("K1", "K3"):
        expect_raises(ValueError, fn, lp, ref, kind, what=f"kind={kind!r}")


@check("kl-penalty")
def kind_not_string(fn):
    lp, ref = kl_inputs((4,), 149)
    for kind in (None, 3, ["k1"], {"k": 1}):
        expect_raises(ValueError, fn, lp, ref, kind, what=f"kind={kind!r}")


@check("kl-penalty")
def shape_error(fn):
    lp, ref = kl_inputs((3, 4), 150)
    expect_raises(ValueError, fn, lp, ref[:, :1], what="ref_log_probs [B, 1]")
    expect_raises(ValueError, fn, lp, ref[0], what="ref_log_probs [T]")


@check("kl-penalty")
def dtypes(fn):
    for dtype in (F32, F64, BF16):
        lp, ref = kl_inputs((3, 4), 151, dtype)
        for kind in ("k1", "k2", "k3"):
            out = as_tensor(call(fn, lp, ref, kind), kind)
            if out.dtype != dtype:
                raise Fail(f"{kind} in {out.dtype} for {dtype} inputs")
            expect_close(out, o_kl(lp, ref, kind), dtype, f"{kind} {dtype}")


@check("kl-penalty")
def no_inplace(fn):
    for kind in ("k1", "k2", "k3"):
        lp, ref = kl_inputs((3, 4), 152)
        unchanged(fn, [lp, ref, kind], kind)


# --------------------------------------------------------------------------------------------
# grpo-advantages


def o_grpo(scores, G, eps=1e-6, scale_by_std=True):
    x = scores.detach().to(F64).reshape(-1, int(G))
    out = torch.zeros_like(x)
    for i, g in enumerate(x):
        if bool(g.max() == g.min()):
            continue
        a = g - g.mean()
        if scale_by_std:
            a = a / (g.std(correction=1) + eps)
        out[i] = a
    return out.reshape(-1)


def expect_grpo(fn, scores, G, what, **kwargs):
    out = call(fn, scores, G, **kwargs)
    want = o_grpo(scores, G, **kwargs)
    x = scores.detach().to(F64).reshape(-1, int(G))
    eps = kwargs.get("eps", 1e-6)
    mean = x.mean(1, keepdim=True).abs()
    std = x.std(1, keepdim=True)
    u = UNIT.get(scores.dtype, 1.2e-7)
    allowance = (int(G) * u * mean / (std + eps) * (1 + want.reshape(-1, int(G)).abs())).reshape(-1)
    dtype = scores.dtype if scores.is_floating_point() else F32
    expect_close(out, want, dtype, what, extra_atol=allowance)


@check("grpo-advantages")
def advantage_values(fn):
    for G, seed in ((3, 160), (4, 161), (8, 162)):
        scores = (uniform((G * 4,), seed, 0, 1) > 0.5).to(F32)
        scores[:G] = torch.tensor([1.0] + [0.0] * (G - 1))
        expect_grpo(fn, scores, G, f"0/1 scores, groups of {G}")
        expect_grpo(fn, randn((G * 3,), seed + 10), G, f"float64 scores, groups of {G}")


@check("grpo-advantages")
def no_std_scaling(fn):
    scores = randn((12,), 163)
    expect_grpo(fn, scores, 4, "scale_by_std=False", scale_by_std=False)


@check("grpo-advantages")
def constant_group_is_zero(fn):
    for value, G in ((0.1, 7), (1.0, 3), (1e4 / 3, 5), (0.7, 4)):
        group = torch.full((G,), value, dtype=F32)
        other = torch.arange(G, dtype=F32)
        scores = torch.cat([group, other])
        for scale in (True, False):
            out = as_tensor(call(fn, scores, G, scale_by_std=scale), "advantages")
            expect_equal(out[:G], torch.zeros(G, dtype=F32), f"{G} scores of {value}, scale_by_std={scale}")


@check("grpo-advantages")
def eps_outside_sqrt(fn):
    scores = torch.tensor([1.0, 1.1, 0.9, 1.0, 2.0, 2.02, 2.0, 1.99], dtype=F64)
    expect_grpo(fn, scores, 4, "eps=0.5, near-tied groups", eps=0.5)


@check("grpo-advantages")
def bessel_small_groups(fn):
    expect_grpo(fn, torch.tensor([1.0, 2.0, 4.0, 3.0], dtype=F64), 2, "groups of 2")
    expect_grpo(fn, torch.tensor([1.0, 2.0, 4.0, 0.0, 3.0, 3.5], dtype=F64), 3, "groups of 3")


@check("grpo-advantages")
def consecutive_groups(fn):
    scores = torch.tensor([0.0, 1.0, 2.0, 10.0, 20.0, 30.0], dtype=F64)
    expect_grpo(fn, scores, 3, "groups [0, 1, 2] and [10, 20, 30]")
    expect_grpo(fn, scores, 2, "three groups of 2")


@check("grpo-advantages")
def flat_output(fn):
    out = as_tensor(call(fn, randn((12,), 164), 4), "advantages")
    if tuple(out.shape) != (12,):
        raise Fail(f"shape {tuple(out.shape)}, expected (12,)")


@check("grpo-advantages")
def error_not_multiple(fn):
    expect_raises(ValueError, fn, torch.zeros(5), 2, what="N=5, group_size=2")
    expect_raises(ValueError, fn, torch.zeros(7), 3, what="N=7, group_size=3")


@check("grpo-advantages")
def error_small_group(fn):
    for G in (1, 0, -2):
        expect_raises(ValueError, fn, torch.zeros(4), G, what=f"group_size={G}")


@check("grpo-advantages")
def error_negative_eps(fn):
    expect_raises(ValueError, fn, torch.arange(4.0), 2, eps=-1e-6, what="eps=-1e-6")


@check("grpo-advantages")
def error_not_1d(fn):
    expect_raises(ValueError, fn, torch.arange(8.0).reshape(2, 4), 4, what="scores [2, 4]")
    expect_raises(ValueError, fn, torch.arange(8.0).reshape(4, 2), 2, what="scores [4, 2]")


@check("grpo-advantages")
def error_bad_group_size(fn):
    expect_raises(ValueError, fn, torch.arange(4.0), True, what="group_size=True")
    expect_raises(ValueError, fn, torch.arange(6.0), 2.5, what="group_size=2.5")


@check("grpo-advantages")
def integral_float_group_size(fn):
    scores = randn((8,), 165)
    expect_grpo(fn, scores, 4.0, "group_size=4.0")


@check("grpo-advantages")
def dtypes(fn):
    for dtype in (F32, F64, BF16):
        scores = randn((12,), 166).to(dtype)
        out = as_tensor(call(fn, scores, 4), "advantages")
        if out.dtype != dtype:
            raise Fail(f"result in {out.dtype} for {dtype} scores")
        expect_grpo(fn, scores, 4, f"{dtype} scores")
    ints = torch.tensor([0, 1, 1, 0, 3, 5, 2, 2])
    out = as_tensor(call(fn, ints, 4), "advantages")
    if out.dtype != F32:
        raise Fail(f"result in {out.dtype} for int64 scores, expected float32")
    expect_grpo(fn, ints, 4, "int64 scores")


@check("grpo-advantages")
def no_inplace(fn):
    scores = randn((12,), 167)
    unchanged(fn, [scores, 4], "grpo advantages")
    unchanged(fn, [scores, 3], "grpo advantages, scale_by_std=False", scale_by_std=False)


@check("grpo-advantages")
def near_tied_float32(fn):
    scores = (100.0 + randn((16,), 169, 0.05)).to(F32)
    expect_grpo(fn, scores, 8, "float32 scores 100 +- 0.05")


@check("grpo-advantages")
def bf16_near_tied(fn):
    scores = (50.0 + randn((16,), 168, 0.6)).to(BF16)
    expect_grpo(fn, scores, 8, "bfloat16 scores 50 +- 0.6")


# --------------------------------------------------------------------------------------------
# dpo-loss


def o_dpo(pc, pr, rc, rr, beta=0.1):
    pc, pr, rc, rr = (t.detach().to(F64) for t in (pc, pr, rc, rr))
    chosen = beta * (pc - rc)
    rejected = beta * (pr - rr)
    x = chosen - rejected
    loss = torch.tensor(sum(_neg_logsigmoid(v) for v in x.tolist()) / x.numel(), dtype=F64)
    return loss, chosen, rejected


def o_dpo_grad(pc, pr, rc, rr, beta=0.1):
    """d loss / d policy_chosen; d loss / d policy_rejected is its negative."""
    _, chosen, rejected = o_dpo(pc, pr, rc, rr, beta)
    return -beta * torch.sigmoid(-(chosen - rejected)) / chosen.numel()


def dpo_inputs(n, seed, dtype=F64, spread=3.0):
    rc = uniform((n,), seed, -80.0, -20.0)
    rr = uniform((n,), seed + 1, -80.0, -20.0)
    pc = rc + randn((n,), seed + 2, spread)
    pr = rr + randn((n,), seed + 3, spread)
    return tuple(t.to(dtype) for t in (pc, pr, rc, rr))


def dpo_outputs(out, what):
    if not isinstance(out, tuple) or len(out) != 3:
        raise Fail(f"{what}: expected a tuple (loss, chosen_rewards, rejected_rewards)")
    return out


@check("dpo-loss")
def loss_values(fn):
    for dtype, seed in ((F64, 180), (F32, 181)):
        args = dpo_inputs(8, seed, dtype)
        loss, _, _ = dpo_outputs(call(fn, *args), "dpo")
        expect_close(loss, o_dpo(*args)[0], dtype, f"loss {dtype}")


@check("dpo-loss")
def beta_values(fn):
    args = dpo_inputs(8, 182)
    for beta in (0.5, 0.02):
        loss, c, _ = dpo_outputs(call(fn, *args, beta=beta), "dpo")
        want = o_dpo(*args, beta)
        expect_close(loss, want[0], F64, f"loss beta={beta}")
        expect_close(c, want[1], F64, f"chosen_rewards beta={beta}")


@check("dpo-loss")
def reward_values(fn):
    for dtype, seed in ((F64, 183), (F32, 184)):
        args = dpo_inputs(8, seed, dtype)
        _, c, r = dpo_outputs(call(fn, *args), "dpo")
        want = o_dpo(*args)
        expect_close(c, want[1], dtype, f"chosen_rewards {dtype}")
        expect_close(r, want[2], dtype, f"rejected_rewards {dtype}")


@check("dpo-loss")
def hand_values(fn):
    z = torch.tensor([-5.0, -7.0])
    loss, _, _ = dpo_outputs(call(fn, z, z, z, z), "dpo")
    expect_close(loss, math.log(2.0), F32, "equal log-ratios")
    args = (torch.tensor([-10.0]), torch.tensor([-12.0]), torch.tensor([-11.0]), torch.tensor([-11.0]))
    loss, _, _ = dpo_outputs(call(fn, *args, beta=0.1), "dpo")
    expect_close(loss, math.log1p(math.exp(-0.2)), F32, "the documented example")


@check("dpo-loss")
def grad_policy_inputs(fn):
    pc, pr, rc, rr = dpo_inputs(8, 185)
    x, y = leaf(pc), leaf(pr)
    loss, _, _ = dpo_outputs(call(fn, x, y, rc, rr), "dpo")
    gc, gr = grad_of(loss, [x, y], "gradient")
    want = o_dpo_grad(pc, pr, rc, rr)
    expect_close(gc, want, F64, "d loss / d policy_chosen_logps")
    expect_close(gr, -want, F64, "d loss / d policy_rejected_logps")


@check("dpo-loss")
def rewards_detached(fn):
    pc, pr, rc, rr = dpo_inputs(6, 186)
    for grads in ((True, True, False, False), (True, True, True, True)):
        args = [leaf(t, g) for t, g in zip((pc, pr, rc, rr), grads)]
        _, c, r = dpo_outputs(call(fn, *args), "dpo")
        if as_tensor(c, "chosen_rewards").requires_grad or as_tensor(r, "rejected_rewards").requires_grad:
            raise Fail("chosen_rewards or rejected_rewards require grad")


@check("dpo-loss")
def large_gaps(fn):
    pc = torch.tensor([-400.0, 0.0, -1000.0, -5.0], dtype=F32)
    pr = torch.tensor([0.0, -600.0, 0.0, -5.0], dtype=F32)
    rc = torch.zeros(4, dtype=F32)
    rr = torch.zeros(4, dtype=F32)
    x, y = leaf(pc), leaf(pr)
    loss, _, _ = dpo_outputs(call(fn, x, y, rc, rr, beta=0.5), "dpo")
    expect_close(loss, o_dpo(pc, pr, rc, rr, 0.5)[0], F32, "reward gaps of -200, +300, -500")
    gc, gr = grad_of(loss, [x, y], "gradient")
    want = o_dpo_grad(pc, pr, rc, rr, 0.5)
    expect_close(gc, want, F32, "d loss / d policy_chosen at large gaps")
    expect_close(gr, -want, F32, "d loss / d policy_rejected at large gaps")


@check("dpo-loss")
def shape_error(fn):
    pc, pr, rc, rr = dpo_inputs(5, 187)
    expect_raises(ValueError, fn, pc, pr[:, None], rc, rr, what="policy_rejected [B, 1]")
    expect_raises(ValueError, fn, pc, pr, rc[:1], rr, what="ref_chosen [1]")
    expect_raises(ValueError, fn, pc, pr, rc, rr[:, None], what="ref_rejected [B, 1]")


@check("dpo-loss")
def dtypes(fn):
    for dtype in (F32, F64, BF16):
        args = dpo_inputs(6, 188, dtype, spread=1.0)
        loss, c, r = dpo_outputs(call(fn, *args), "dpo")
        expect_scalar(loss, dtype, f"loss for {dtype} inputs")
        for name, t in (("chosen_rewards", c), ("rejected_rewards", r)):
            if as_tensor(t, name).dtype != dtype:
                raise Fail(f"{name} in {t.dtype} for {dtype} inputs")
        expect_close(loss, o_dpo(*args)[0], dtype, f"loss {dtype}")


@check("dpo-loss")
def no_inplace(fn):
    pc, pr, rc, rr = dpo_inputs(6, 189)
    unchanged(fn, [pc, pr, rc, rr], "dpo")
    unchanged(fn, [leaf(pc), leaf(pr), rc, rr], "dpo, policy inputs requiring grad", beta=0.3)


# --------------------------------------------------------------------------------------------
# ppo-memory


def o_mem(actor, critic, reward, reference, wb=2, gb=2, ob=12, n=1, stage=0):
    def ceil(b):
        return -(-b // n)

    def trained(p):
        w, g, o = p * wb, p * gb, p * ob
        return (ceil(w) if stage >= 3 else w) + (ceil(g) if stage >= 2 else g) + (ceil(o) if stage >= 1 else o)

    out = {"actor": trained(actor), "critic": trained(critic), "reward": reward * wb, "reference": reference * wb}
    out["total_per_gpu"] = sum(out.values())
    return out


def expect_ledger(fn, args, kwargs, what):
    got = call(fn, *args, **kwargs)
    ints = [int(a) for a in args]
    want = o_mem(
        *ints,
        wb=int(kwargs.get("weight_bytes", 2)),
        gb=int(kwargs.get("grad_bytes", 2)),
        ob=int(kwargs.get("optimizer_bytes", 12)),
        n=int(kwargs.get("num_gpus", 1)),
        stage=kwargs.get("zero_stage", 0),
    )
    if not isinstance(got, dict) or set(got) != set(want):
        raise Fail(f"{what}: expected a dict with keys {sorted(want)}")
    for key, value in want.items():
        if got[key] != value:
            raise Fail(f"{what}: {key} = {got[key]!r}, expected {value}")
    return got


B7, B3 = 7_000_000_000, 3_000_000_000


@check("ppo-memory")
def chapter_example(fn):
    expect_ledger(fn, (B7, B7, B3, B7), {}, "7B/7B/3B/7B on one GPU")


@check("ppo-memory")
def chapter_zero3(fn):
    expect_ledger(fn, (B7, B7, B3, B7), {"num_gpus": 8, "zero_stage": 3}, "8 GPUs, ZeRO-3")


@check("ppo-memory")
def stage0_multi_gpu(fn):
    expect_ledger(fn, (B7, B7, B3, B7), {"num_gpus": 8, "zero_stage": 0}, "8 GPUs, no ZeRO")
    expect_ledger(fn, (5, 3, 2, 5), {"num_gpus": 3}, "tiny models, 3 GPUs, no ZeRO")


@check("ppo-memory")
def zero_stage_1(fn):
    expect_ledger(fn, (B7, 1_000_000_007, B3, B7), {"num_gpus": 8, "zero_stage": 1}, "8 GPUs, ZeRO-1")
    expect_ledger(fn, (5, 3, 2, 5), {"num_gpus": 4, "zero_stage": 1}, "tiny models, ZeRO-1")


@check("ppo-memory")
def zero_stage_2(fn):
    expect_ledger(fn, (B7, 1_000_000_007, B3, B7), {"num_gpus": 8, "zero_stage": 2}, "8 GPUs, ZeRO-2")
    expect_ledger(fn, (5, 3, 2, 5), {"num_gpus": 3, "zero_stage": 2}, "tiny models, ZeRO-2")


@check("ppo-memory")
def rounding_up(fn):
    expect_ledger(fn, (1, 0, 0, 0), {"num_gpus": 4, "zero_stage": 3}, "1 parameter on 4 GPUs")
    expect_ledger(fn, (7, 5, 3, 1), {"num_gpus": 3, "zero_stage": 3, "weight_bytes": 1}, "odd sizes on 3 GPUs")
    expect_ledger(fn, (10**16, 10**16 + 1, 10**15, 10**16), {"num_gpus": 3, "zero_stage": 3}, "10**16 on 3 GPUs")
    expect_ledger(fn, (10**16 + 1, 3, 1, 1), {"num_gpus": 7, "zero_stage": 1}, "10**16 + 1 on 7 GPUs, ZeRO-1")


@check("ppo-memory")
def byte_sizes(fn):
    kw = {"weight_bytes": 4, "grad_bytes": 4, "optimizer_bytes": 8}
    expect_ledger(fn, (B7, B7, B3, B7), kw, "fp32 weights and grads, 8-byte optimizer")
    expect_ledger(fn, (B7, 5, B3, 11), {**kw, "num_gpus": 3, "zero_stage": 2}, "non-default sizes, ZeRO-2")


@check("ppo-memory")
def random_ledgers(fn):
    g = gen(190)
    for _ in range(40):
        counts = [int(torch.randint(0, 10**11, (1,), generator=g)) for _ in range(4)]
        wb, gb, ob = (int(torch.randint(1, 17, (1,), generator=g)) for _ in range(3))
        n = int(torch.randint(1, 17, (1,), generator=g))
        stage = int(torch.randint(0, 4, (1,), generator=g))
        kw = {"weight_bytes": wb, "grad_bytes": gb, "optimizer_bytes": ob, "num_gpus": n, "zero_stage": stage}
        expect_ledger(fn, tuple(counts), kw, f"random ledger {counts} {kw}")


@check("ppo-memory")
def integral_floats(fn):
    got = expect_ledger(fn, (7e9, 7e9, 3e9, 7e9), {}, "counts given as 7e9")
    expect_ledger(fn, (7e9, 7e9, 3e9, 7e9), {"weight_bytes": 2.0, "num_gpus": 8, "zero_stage": 3}, "2.0-byte weights")
    for key, value in got.items():
        if type(value) is not int:
            raise Fail(f"{key} is a {type(value).__name__}, not an int")


@check("ppo-memory")
def entries_are_ints(fn):
    for args, kw in (((B7, B7, B3, B7), {}), ((7e9, 7.0, 3e9, 0.0), {"num_gpus": 3, "zero_stage": 2})):
        got = call(fn, *args, **kw)
        if not isinstance(got, dict):
            raise Fail("expected a dict")
        for key, value in got.items():
            if type(value) is not int:
                raise Fail(f"{key} is a {type(value).__name__} ({value!r}), not an int")


@check("ppo-memory")
def error_negative_count(fn):
    for bad in (-1, -7e9):
        expect_raises(ValueError, fn, bad, 1, 1, 1, what=f"actor_params={bad!r}")
        expect_raises(ValueError, fn, 1, 1, 1, bad, what=f"reference_params={bad!r}")


@check("ppo-memory")
def error_fractional_count(fn):
    for bad in (7.5, 0.5):
        expect_raises(ValueError, fn, bad, 1, 1, 1, what=f"actor_params={bad!r}")
        expect_raises(ValueError, fn, 1, 1, bad, 1, what=f"reward_params={bad!r}")


@check("ppo-memory")
def error_bool_count(fn):
    expect_raises(ValueError, fn, True, 1, 1, 1, what="actor_params=True")
    expect_raises(ValueError, fn, 1, False, 1, 1, what="critic_params=False")


@check("ppo-memory")
def error_byte_sizes(fn):
    for key, bad in (("weight_bytes", -2), ("grad_bytes", 1.5), ("optimizer_bytes", True), ("weight_bytes", -4.0)):
        expect_raises(ValueError, fn, 10, 10, 10, 10, what=f"{key}={bad!r}", **{key: bad})


@check("ppo-memory")
def error_num_gpus(fn):
    for bad in (0, -1):
        expect_raises(ValueError, fn, 10, 10, 10, 10, num_gpus=bad, what=f"num_gpus={bad}")


@check("ppo-memory")
def error_zero_stage(fn):
    for bad in (4, -1, "3"):
        expect_raises(ValueError, fn, 10, 10, 10, 10, zero_stage=bad, what=f"zero_stage={bad!r}")
