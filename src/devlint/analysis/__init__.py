"""The placement analysis: abstract interpretation of a program's device placement."""
