"""``python -m kompakt``: the same as the ``kompakt`` command."""

from kompakt.cli.app import main

if __name__ == "__main__":
    main()
