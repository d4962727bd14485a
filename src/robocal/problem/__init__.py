"""Problem files: what to calibrate, from which data, with which priors."""

from robocal.problem.build import Problem, load_problem

__all__ = ["Problem", "load_problem"]
