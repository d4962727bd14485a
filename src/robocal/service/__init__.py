"""The calibration service: a FastAPI application over the fleet store (REST under /api/, the
dashboard at /), workers that take jobs from the store, and the station agent that uploads sessions.

Access is by bearer token (robocal.service.auth): `station` tokens create sessions for their own
station and read what it calibrated, `engineer` tokens read everything and re-run jobs, `admin`
tokens also manage models, criteria, stations and tokens."""
