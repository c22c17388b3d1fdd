"""The `kompakt` command line (typer + rich). Entry point: `kompakt.cli.app.main`."""
