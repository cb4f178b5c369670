"""The demo: a synthetic campaign with real (synthesised) audio, ready for volunteers."""
