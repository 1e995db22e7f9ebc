"""formwork.grammar"""
