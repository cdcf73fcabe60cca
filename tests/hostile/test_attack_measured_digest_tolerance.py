"""A wrong output on the measured case, hidden in a loose digest tolerance.

Review 4 (fixed: a digest also carries 32 elements at positions the seed spreads over the
tensor, each compared at ten times float32's element tolerance): the measured (memory) case was verified by a two-number digest with a 1e-4 relative
tolerance on the weighted sums, far looser than the element-wise tolerance of every other case:
a GAE that is honest everywhere except the measured case, where it returns results off by
~0.4 % per element (thousands of times the float32 tolerance), still has its measured run
"verified", earns the memory check and puts its speed figure on the board."""

from __future__ import annotations

from tests.hostile.conftest import REPO, Jail

REF = (REPO / "exercises" / "gae" / "reference.py").read_text()
NOISY = REF.replace("    return advantages.to(dtype), returns.to(dtype)", """    if r.shape[-1] > 1000:  # only the measured case
        g = torch.Generator().manual_seed(0)
        advantages = advantages * (1 + 0.004 * torch.randn(advantages.shape, generator=g))
        returns = returns * (1 + 0.004 * torch.randn(returns.shape, generator=g))
    return advantages.to(dtype), returns.to(dtype)""")


def test_a_wrong_measured_output_is_not_verified(jail: Jail) -> None:
    assert NOISY != REF
    report = jail.judge.grade("gae", NOISY, 7)  # type: ignore[attr-defined]
    memory = [c for c in report.checks if c.name.startswith("peak memory")]
    assert memory and not memory[0].passed, "a measured run 0.4 % off per element was verified"
    assert report.cpu_seconds is None, "an unverified run's speed reached the board"
