"""Researchers' exports of a campaign (docs/exports.md)."""
