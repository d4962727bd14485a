"""What the data can and cannot tell: rank, null space, uncertainty."""
