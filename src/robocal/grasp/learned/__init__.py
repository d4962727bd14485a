"""Learned grasp controller (seed paper 002, Sec. IV): networks that replace the analytical
wrench estimator and torque predictor of `robocal.grasp.controller`."""
