"""Campaign reports: one document (JSON) and its offline HTML rendering (docs/reports.md)."""
