"""Our platform files, one per board: pin facts with their sources (docs/boards.md)."""
