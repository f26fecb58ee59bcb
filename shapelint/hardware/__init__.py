"""The GPU table and the engine catalogue: data with sources, and their loaders."""
