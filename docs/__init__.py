"""The documentation: a package only so that wheels ship it (app/mtcjudge/_resources)."""
