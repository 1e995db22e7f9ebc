"""formwork.schemas"""
