"""formwork.core"""
