"""Source spans, the model types, the dtype table and arithmetic: what every layer shares."""
