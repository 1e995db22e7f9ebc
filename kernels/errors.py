"""Typed errors raised by formwork.kernels for bad inputs or an unusable backend."""

from __future__ import annotations


class KernelInputError(ValueError):
    """A kernel argument has the wrong shape, dtype, device or value."""


class KernelBackendError(RuntimeError):
    """The requested kernel backend cannot run here (bad name, triton missing, CPU without interpreter)."""
