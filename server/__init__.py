"""formwork.server"""
