"""robocal: calibrate robots without expensive metrology.

The numerical core runs on JAX in float64; importing the package switches JAX to
64-bit before any array is created.
"""

import jax

jax.config.update("jax_enable_x64", True)

__version__ = "0.1.0"
