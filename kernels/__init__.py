"""formwork.kernels"""
