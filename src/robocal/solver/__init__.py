"""One MAP least-squares solver for every measurement model."""

from robocal.solver.map import MapProblem, Rejection, Solution, solve, solve_many

__all__ = ["MapProblem", "Rejection", "Solution", "solve", "solve_many"]
