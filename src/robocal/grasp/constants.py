"""The physical setup of the grasp-controller paper (seed 002, Sec. V-A), shared by the controller
that models it and the MuJoCo scene that simulates it."""

STIFFNESS = 1.0e4  # N/m, elastic contact stiffness per contact point
FRICTION = 0.4  # Coulomb friction coefficient
KP = 5.0  # Nm/rad, joint impedance stiffness
