"""Page templates (Jinja2): a package only so that wheels ship them (app/mtcjudge/_resources)."""
