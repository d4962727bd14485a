"""Reading measurement data: tables with located errors."""
