"""robocal: calibrate robots without expensive metrology.

The numerical core runs on JAX in float64. Importing the package does not import JAX (so the
command line's help starts at once); it makes JAX start in 64-bit mode whenever it is imported,
or switches it now if it already was.
"""

import os
import sys

if "jax" in sys.modules:
    sys.modules["jax"].config.update("jax_enable_x64", True)
else:
    os.environ["JAX_ENABLE_X64"] = "1"  # read once, when JAX is first imported

__version__ = "0.1.0"
