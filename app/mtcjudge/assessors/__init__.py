"""The campaign's assessors as organizers see and manage them: their overview, their
reliability from the hidden trials, and the actions on them (set aside, bring back, pause,
resume). Shared by the campaign pages, the planner, results, exports and reports."""
