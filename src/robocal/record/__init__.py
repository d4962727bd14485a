"""Recording calibration data at the robot: `robocal record sockets`, a terminal recorder of
sphere-in-socket configurations (MUKCa), fed by a joint-state source (ROS 2, or a scripted
operator for demos and tests)."""
