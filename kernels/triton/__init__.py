"""Triton kernels (GPU fast path; runs on CPU tensors under TRITON_INTERPRET=1). Import lazily."""
