"""Triton RMSNorm / SiLU-and-mul / rotary kernels vs their torch twins, under TRITON_INTERPRET=1.

Not collected by the main run (no test_ prefix): `test_kernels_triton.py` runs this file in a subprocess.
float32 agrees to 1e-5 (bitwise for SiLU-and-mul's elementwise float math is not promised: exp differs
by an ulp); float16 within 4e-3 and bfloat16 within 3e-2 (relative, outputs of magnitude < 8): one to two
ulps of the output dtype, since the interpreter rounds float32 -> bfloat16 by truncation.
"""

from __future__ import annotations

import os

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

if os.environ.get("TRITON_INTERPRET") != "1":  # pragma: no cover - guarded by the subprocess wrapper
    raise RuntimeError("run through tests/test_kernels_triton.py (needs TRITON_INTERPRET=1 before import)")

from formwork.kernels import reference  # noqa: E402
from formwork.kernels.triton import activation, norm, rotary  # noqa: E402

TOLERANCE = {torch.float32: 1e-5, torch.float16: 4e-3, torch.bfloat16: 3e-2}
DTYPES = list(TOLERANCE)


def _close(actual: torch.Tensor, expected: torch.Tensor) -> None:
    tol = TOLERANCE[expected.dtype]
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    torch.testing.assert_close(actual.float(), expected.float(), atol=tol, rtol=tol)


# --- RMSNorm --------------------------------------------------------------------------------------

@settings(max_examples=12, deadline=None)
@given(tokens=st.integers(1, 5), hidden=st.integers(1, 200), dtype=st.sampled_from(DTYPES),
       with_residual=st.booleans(), seed=st.integers(0, 2**16))
def test_rms_norm_matches_reference(tokens, hidden, dtype, with_residual, seed):
    gen = torch.Generator().manual_seed(seed)
    x = (torch.randn(tokens, hidden, generator=gen) * 3).to(dtype)
    weight = torch.randn(hidden, generator=gen).to(dtype)
    residual = torch.randn(tokens, hidden, generator=gen).to(dtype) if with_residual else None
    expected_residual = None if residual is None else residual.clone()
    expected = reference.rms_norm(x, weight, 1e-5, expected_residual)
    out = norm.rms_norm(x, weight, 1e-5, residual)
    _close(out, expected)
    if with_residual:
        _close(residual, expected_residual)  # the sum was written back in place


def test_rms_norm_reads_a_strided_input_and_large_rows():
    gen = torch.Generator().manual_seed(3)
    wide = torch.randn(3, 2 * 1500, generator=gen)
    x = wide[:, :1500]  # a non-contiguous view
    weight = torch.rand(1500, generator=gen) + 0.5
    _close(norm.rms_norm(x, weight, 1e-6), reference.rms_norm(x, weight, 1e-6))


# --- SiLU-and-mul ---------------------------------------------------------------------------------

@settings(max_examples=12, deadline=None)
@given(tokens=st.integers(1, 5), width=st.integers(1, 300), dtype=st.sampled_from(DTYPES),
       seed=st.integers(0, 2**16))
def test_silu_and_mul_matches_reference(tokens, width, dtype, seed):
    gate_up = (torch.randn(tokens, 2 * width, generator=torch.Generator().manual_seed(seed)) * 2).to(dtype)
    _close(activation.silu_and_mul(gate_up), reference.silu_and_mul(gate_up))


def test_silu_and_mul_spans_several_column_blocks():
    gate_up = torch.randn(2, 2 * 2500, generator=torch.Generator().manual_seed(4)).to(torch.bfloat16)
    _close(activation.silu_and_mul(gate_up), reference.silu_and_mul(gate_up))


# --- rotary ---------------------------------------------------------------------------------------

def _qkv(gen: torch.Generator, tokens: int, heads: int, kv_heads: int, head_dim: int, dtype: torch.dtype):
    """query/key as strided views of one fused qkv row, like the model's."""
    qkv = torch.randn(tokens, (heads + 2 * kv_heads) * head_dim, generator=gen).to(dtype)
    query = qkv[:, :heads * head_dim].view(tokens, heads, head_dim)
    key = qkv[:, heads * head_dim:(heads + kv_heads) * head_dim].view(tokens, kv_heads, head_dim)
    return qkv, query, key


@pytest.mark.parametrize("tokens,heads,kv_heads,head_dim,dtype,scaling", [
    (1, 4, 2, 16, torch.float32, 1.0),
    (7, 3, 1, 10, torch.bfloat16, 1.0),      # odd head counts, head_dim / 2 not a power of two
    (5, 2, 2, 64, torch.float16, 1.2),       # a yarn-style cos/sin scale
    (3, 6, 3, 24, torch.bfloat16, 0.9),
])
def test_rotary_matches_reference(tokens, heads, kv_heads, head_dim, dtype, scaling):
    gen = torch.Generator().manual_seed(tokens * heads)
    positions = torch.randint(0, 5000, (tokens,), generator=gen)
    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    qkv, query, key = _qkv(gen, tokens, heads, kv_heads, head_dim, dtype)
    expected_qkv = qkv.clone()
    expected_query = expected_qkv[:, :heads * head_dim].view(tokens, heads, head_dim)
    expected_key = expected_qkv[:, heads * head_dim:(heads + kv_heads) * head_dim].view(tokens, kv_heads, head_dim)
    tables = reference.rotary_tables(positions, inv_freq, scaling, dtype)
    reference.rotary_embedding(expected_query, expected_key, *tables)
    rotary.rotary_embedding(query, key, *reference.rotary_tables(positions.to(torch.int32), inv_freq, scaling, dtype))
    if dtype == torch.float32:  # torch's tables, torch's products: the same bits
        assert torch.equal(qkv, expected_qkv)
    _close(qkv, expected_qkv)  # q and k rotated in place (half types: the interpreter's own rounding), v untouched
    assert torch.equal(qkv[:, (heads + kv_heads) * head_dim:], expected_qkv[:, (heads + kv_heads) * head_dim:])
