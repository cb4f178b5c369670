"""Tests of organizer accounts, sign-in, authorization and the audit log (mtcjudge.organizers)."""
