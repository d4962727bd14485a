"""Simulated robots and measurements: perturbed "true" robots, random configurations, data files.

Used by `robocal demo` and by the tests, which compare a calibration against the known truth.
"""
