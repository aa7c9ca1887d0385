"""The optimization notebooks of the bundled tasks: journals, scripts, condensed results. Not part of the product."""
