"""The one primitive every device change ends in: a copy of a tensor to another logical device.

`Tensor.to`, `.cuda()`, `.cpu()`, `.type()`, `torch.tensor(t, device=...)`, DataParallel's scatter
and the CTC loss's own move of its targets all end here. It keeps PyTorch's semantics: the
tensor itself when nothing changes, otherwise a fresh copy (a CPU tensor is never tagged in
place: that is what makes a discarded `x.to(device)` visible), with a backward that copies the
gradient back. It sits below both modes and the tensor patches, which all need it.
"""

from __future__ import annotations

from typing import Any

import torch

from devlint.simulate import provenance, tags
from devlint.simulate.errors import check_index
from devlint.simulate.tags import CPU

_orig_to = torch._C.TensorBase.to  # the real `to`, unaffected by the patches


class _Move(torch.autograd.Function):
    """A copy to another logical device whose backward copies the gradient back."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, src: str, dst: str, dtype: Any, memory_format: Any) -> torch.Tensor:
        ctx.src = src
        ctx.src_dtype = x.dtype
        out = _raw_copy(x, dtype, memory_format)
        tags.set_device(out, dst)
        return out

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple:
        out = _raw_copy(grad, ctx.src_dtype, None)
        tags.set_device(out, ctx.src)
        return out, None, None, None, None


def _raw_copy(x: torch.Tensor, dtype: Any, memory_format: Any) -> torch.Tensor:
    if memory_format is None:
        memory_format = torch.preserve_format
    return _orig_to(x, dtype=dtype if dtype is not None else x.dtype, copy=True, memory_format=memory_format)


def move(
    t: torch.Tensor,
    dst: str,
    dtype: Any = None,
    memory_format: Any = None,
    *,
    copy: bool = False,
) -> torch.Tensor:
    """`t` on logical device `dst`: `t` itself when nothing changes, else a fresh copy."""
    src = tags.device_of(t)
    check_index(dst)
    if src == dst:
        if dtype is None and memory_format is None and not copy:
            return t
        return _orig_to(
            t,
            dtype=dtype if dtype is not None else t.dtype,
            copy=copy,
            memory_format=memory_format if memory_format is not None else torch.preserve_format,
        )
    if src == "meta" or dst == "meta":
        return _orig_to(t, device=dst, dtype=dtype)
    target_dtype = dtype if dtype is not None else t.dtype
    if (
        t.requires_grad
        and torch.is_grad_enabled()
        and (target_dtype.is_floating_point or target_dtype.is_complex)
    ):
        out = _Move.apply(t, src, dst, dtype, memory_format)
    else:
        out = _raw_copy(t, dtype, memory_format)
        tags.set_device(out, dst)
    if dst != CPU:
        provenance.set_moved_at(out, provenance.creator_frame())
    return out
