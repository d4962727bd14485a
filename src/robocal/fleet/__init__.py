"""Batch calibration of fleets: a store of models, units, sessions, jobs and results, and the engine
that calibrates every pending session with the core (`load_problem` / `calibrate`)."""

DEFAULT_DB = "robocal.db"  # the fleet store in the current folder, a SQLite file
