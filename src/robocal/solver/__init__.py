"""One MAP least-squares solver for every measurement model."""

from robocal.solver.map import MapProblem, Rejection, Solution, fit, solve, solve_many

__all__ = ["MapProblem", "Rejection", "Solution", "fit", "solve", "solve_many"]
