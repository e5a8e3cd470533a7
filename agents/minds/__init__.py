"""agents/minds."""
