"""`python -m formwork.cli`: the `formwork` command."""
import sys

from formwork.cli import main

sys.exit(main())
