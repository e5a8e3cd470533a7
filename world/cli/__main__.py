"""`python -m world.cli`: the same as the `townsfolk` command."""

import sys

from world.cli import main

sys.exit(main())
