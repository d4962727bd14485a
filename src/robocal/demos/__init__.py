"""End-to-end demonstrations that need no external files."""
