"""The campaign engine: an MTC engine built from a campaign's stored rows, with the maps from
database ids to engine indices, and the engine's part of the stored results document (shared
by the planner, results, exports and reports)."""
