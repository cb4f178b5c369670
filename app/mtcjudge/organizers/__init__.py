"""Organizer accounts: passwords (Argon2id), sign-in sessions stored in the database, CSRF
tokens, the sign-in pages and the landing page."""
