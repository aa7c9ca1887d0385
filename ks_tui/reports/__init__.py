"""Session reports made for people: `ks report SESSION --html FILE`.

data.py gathers what a page shows (no rendering, no HTML); html.py draws it into one self-contained file.
"""
