"""Tests of organizer accounts, sign-in and authorization (mtcjudge.organizers)."""
