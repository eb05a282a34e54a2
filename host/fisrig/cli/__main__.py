"""`python -m fisrig.cli`, as the `fisrig` command."""
import sys

from fisrig.cli import main

sys.exit(main())
