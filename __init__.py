"""formwork: a structured-generation engine."""
