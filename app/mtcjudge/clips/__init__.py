"""The campaign's clips: the audio files on disk, whether each one plays, and the excerpts
served for reference trials (shared by campaigns, the pool, judging and exports)."""
