"""`python -m rubricflow`: the command line, as the `rubricflow` console script runs it."""

from rubricflow.cli import main

if __name__ == "__main__":
    main()
