"""Trees: the node model, the builder seam and the builders (filesystem, path list)."""
