"""Measurement models: each turns one kind of recorded data into whitened residual rows."""
