"""Human-readable outputs: console tables and the HTML report."""
