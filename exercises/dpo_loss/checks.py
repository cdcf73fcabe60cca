"""Cases and weighted checks for `dpo-loss`."""

from __future__ import annotations

from typing import Any

import torch

from exercises.common import (
    expect_detached,
    expect_dtype_device,
    expect_grads,
    expect_inputs_unchanged,
    expect_value_error,
    expect_values,
)
from exercises.framework import Case, CaseGen, CheckContext, check

GRAD = ("0", "1")
NAMES = ("policy_chosen_logps", "policy_rejected_logps")
BETAS = (0.5, 0.05, 1.0, 0.25)


def _logps(
    gen: CaseGen, b: int, dtype: torch.dtype = torch.float32, level: float = 40.0, spread: float = 3.0
) -> list[torch.Tensor]:
    """Sequence log-probs: reference around -level, policy a few nats away from it."""
    ref_c = -gen.uniform(b, low=0.5 * level, high=1.5 * level, dtype=torch.float64)
    ref_r = -gen.uniform(b, low=0.5 * level, high=1.5 * level, dtype=torch.float64)
    pol_c = ref_c + gen.randn(b, dtype=torch.float64, scale=spread) + 1.0
    pol_r = ref_r + gen.randn(b, dtype=torch.float64, scale=spread) - 1.0
    return [t.to(dtype) for t in (pol_c, pol_r, ref_c, ref_r)]


def _case(
    gen: CaseGen,
    args: list[torch.Tensor],
    beta: float | None = None,
    *,
    tags: tuple[str, ...],
    about: str,
    grad: bool | tuple[str, ...] = False,
    **fields: Any,
) -> Case:
    """``grad=True``: policy inputs require grad and the loss is back-propagated; a tuple: they
    require grad, without a backward pass."""
    kwargs = {} if beta is None else {"beta": beta}
    if grad is True:
        fields.update(grad=GRAD, backward=[0])
    elif grad:
        fields.update(grad=grad)
    return gen.case(*args, kwargs=kwargs, tags=tags, about=about, **fields)


def _pair(
    gen: CaseGen, args: list[torch.Tensor], beta: float | None = None, *, tags: tuple[str, ...], about: str
) -> list[Case]:
    """The same inputs twice: once for the values (no autograd involved, so a loss that lost its
    graph still gets credit for its value), once with gradient on the policy inputs."""
    return [
        _case(gen, args, beta, tags=tags, about=about),
        _case(gen, args, beta, tags=tuple(f"{t}-grad" for t in tags), about=about, grad=True),
    ]


def _t(*values: float) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64)


def cases(gen: CaseGen) -> list[Case]:
    """Every input the checks read, built from the run's seed."""
    out: list[Case] = []
    for i in range(3):
        out += _pair(
            gen,
            _logps(gen, gen.randint(3, 13)),
            tags=("random", "default-beta"),
            about=f"random batch {i + 1}, default beta",
        )
    for i, beta in enumerate(BETAS[:2] + (BETAS[2 + gen.randint(0, 2)],)):
        out += _pair(
            gen,
            _logps(gen, gen.randint(3, 13)),
            beta,
            tags=("random", "custom-beta"),
            about=f"random batch {i + 1}, beta={beta:g}",
        )
    # Hand-worked: equal log-ratios (log 2, rewards 0); the documented example; a one-sided case.
    out += _pair(
        gen,
        [_t(-5.0, -7.0), _t(-5.0, -7.0), _t(-5.0, -7.0), _t(-5.0, -7.0)],
        tags=("point",),
        about="equal log-ratios (loss log 2, rewards 0)",
    )
    out += _pair(
        gen,
        [_t(-10.0), _t(-12.0), _t(-11.0), _t(-11.0)],
        0.1,
        tags=("point",),
        about="policy -10/-12, reference -11/-11, beta=0.1 (loss 0.5981)",
    )
    out += _pair(
        gen,
        [_t(-20.0, -3.0), _t(-30.0, -1.0), _t(-24.0, -3.0), _t(-26.0, -5.0)],
        0.5,
        tags=("point",),
        about="chosen log-ratios +4/0, rejected -4/+4, beta=0.5",
    )
    # Large reward gaps in float32: -logsigmoid(-200) = 200; log(sigmoid(-200)) is log(0).
    out += _pair(
        gen,
        [
            torch.tensor([-900.0, -50.0, -400.0, -60.0]),
            torch.tensor([-100.0, -600.0, -20.0, -61.0]),
            torch.tensor([-500.0, -50.0, -300.0, -60.0]),
            torch.tensor([-100.0, -100.0, -20.0, -60.0]),
        ],
        0.5,
        tags=("stable",),
        about="reward gaps -200, +250, -50, +0.5 at beta=0.5 (float32)",
    )
    out += _pair(
        gen,
        [
            torch.tensor([-3000.0, -1200.0]),
            torch.tensor([-900.0, -1000.0]),
            torch.tensor([-1500.0, -1100.0]),
            torch.tensor([-1400.0, -1000.0]),
        ],
        tags=("stable",),
        about="reward gaps -200 and +10 at the default beta (float32)",
    )
    # Detachment: policy inputs require grad, no backward pass (so only requires_grad is read).
    for i, detach_beta in enumerate((None, BETAS[gen.randint(0, len(BETAS))])):
        out.append(
            _case(
                gen,
                _logps(gen, gen.randint(3, 9)),
                detach_beta,
                tags=("detach",),
                about=f"policy inputs requiring grad {i + 1}",
                grad=GRAD,
                probes=((1,), (2,)),
            )
        )
    # Shape contract: each argument mismatched in turn.
    b = gen.randint(3, 8)
    good = _logps(gen, b)
    for i, bad in enumerate((good[1][:-1], good[2].unsqueeze(1), good[3][:1])):
        args = list(good)
        args[i + 1] = bad
        out.append(_case(gen, args, tags=("shape",), about="mismatched shapes"))
    args = list(good)
    args[0] = good[0].unsqueeze(1)
    out.append(_case(gen, args, tags=("shape",), about="mismatched shapes"))
    # Dtypes and device (per-token-sized log-probs, so bfloat16 keeps a few digits).
    for dtype in (torch.float32, torch.float64, torch.bfloat16):
        out.append(
            _case(
                gen,
                _logps(gen, gen.randint(3, 9), dtype=dtype, level=4.0, spread=1.0),
                0.5,
                tags=("dtype",),
                about=f"{dtype} inputs",
            )
        )
    # In-place edits.
    out.append(
        _case(
            gen,
            _logps(gen, gen.randint(3, 9)),
            0.2,
            tags=("inplace",),
            about="inputs checked after the call",
            return_inputs=True,
        )
    )
    return out


@check("loss on random batches (default beta)", 12, core=True)
def loss_default(ctx: CheckContext) -> None:
    expect_values(ctx, ctx.cases("random", "default-beta"), path=(0,), what="loss")


@check("loss with non-default beta", 10)
def loss_custom_beta(ctx: CheckContext) -> None:
    expect_values(ctx, ctx.cases("random", "custom-beta"), path=(0,), what="loss")


@check("chosen_rewards and rejected_rewards: beta * (policy - reference)", 12, core=True)
def rewards(ctx: CheckContext) -> None:
    picked = ctx.cases("random")
    expect_values(ctx, picked, path=(1,), what="chosen_rewards")
    expect_values(ctx, picked, path=(2,), what="rejected_rewards")


@check("hand-worked values (log 2 at equal log-ratios, the documented example)", 9)
def worked_values(ctx: CheckContext) -> None:
    picked = ctx.cases("point")
    for path, what in (((1,), "chosen_rewards"), ((2,), "rejected_rewards"), ((0,), "loss")):
        expect_values(ctx, picked, path=path, what=what)


@check("gradient of the loss with respect to both policy inputs", 14)
def gradient(ctx: CheckContext) -> None:
    picked = ctx.cases("random-grad") + ctx.cases("point-grad")
    for arg, name in zip(GRAD, NAMES):
        expect_grads(ctx, picked, arg=arg, name=name)


@check("chosen_rewards and rejected_rewards are detached", 8, gated=True, reads=("probes",), self_reported="detachment")
def detached(ctx: CheckContext) -> None:
    expect_detached(ctx, ctx.cases("detach"), paths=[(1,), (2,)], names=["chosen_rewards", "rejected_rewards"])


@check("finite and exact for reward gaps of hundreds (float32)", 12)
def stable(ctx: CheckContext) -> None:
    expect_values(ctx, ctx.cases("stable"), path=(0,), what="loss")
    for arg, name in zip(GRAD, NAMES):
        expect_grads(ctx, ctx.cases("stable-grad"), arg=arg, name=name)


@check("ValueError on mismatched shapes (no broadcasting)", 8, gated=True)
def shape_errors(ctx: CheckContext) -> None:
    expect_value_error(ctx, ctx.cases("shape"))


@check("results in the inputs' dtype (float32, float64, bfloat16) and device; 0-dim loss", 10, gated=True)
def dtype_device(ctx: CheckContext) -> None:
    picked = ctx.cases("dtype")
    expect_dtype_device(ctx, picked, path=(0,), what="loss", zero_dim=True)
    expect_dtype_device(ctx, picked, path=(1,), what="chosen_rewards")
    expect_dtype_device(ctx, picked, path=(2,), what="rejected_rewards")


@check("inputs not modified in place", 5, gated=True, self_reported="in-place edits")
def no_inplace(ctx: CheckContext) -> None:
    expect_inputs_unchanged(ctx, ctx.cases("inplace"))
