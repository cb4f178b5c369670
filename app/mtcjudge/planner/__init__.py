"""The MTC planner: the engine of each campaign, run in the background, off the request path."""
